// Fault family "ReDoS": every pattern a request meets — route-group globs built from the rules file,
// path normalisation, X-Forwarded-For and address parsing — on 10 KB hostile inputs and hostile
// patterns. Route globs are compiled to segment lists, never to regular expressions, so the work is
// linear in the path; this measures it (median µs per call, and the 10 KB / 1 KB ratio: ~10 when
// linear, ~100 when quadratic, unbounded when a regex backtracks) and asserts a bound that any
// catastrophic case would blow by orders of magnitude.
import { describe, expect, it } from 'vitest';
import { resolveClientIp, TrustedProxies } from '../../src/request/identity.js';
import { parseIp } from '../../src/request/ip.js';
import { checkRoutePattern, normalizePath, RouteGroups } from '../../src/request/route-groups.js';
import { reportFigure } from '../helpers/figures.js';

/** Hostile paths of about `size` characters. */
function hostilePaths(size: number): Record<string, string> {
  const rep = (s: string) => s.repeat(Math.ceil(size / s.length)).slice(0, size);
  return {
    slashes: '/' + rep('/'),
    dotSegments: '/' + rep('../'),
    dotsAndSlashes: '/' + rep('./'),
    encodedSlashes: '/' + rep('%2F'),
    encodedRunInvalidUtf8: '/' + rep('%C3%28'),
    percentNoHex: '/' + rep('%%'),
    halfEscapes: '/' + rep('%2'),
    manySegments: '/' + rep('a/'),
    oneLongSegment: '/' + rep('a'),
    queryAfterLong: '/' + rep('a') + '?' + rep('#'),
    nearMatch: '/v1/' + rep('users/') + 'x',
  };
}

/** Route patterns as hostile as the rules file allows: deep wildcards, many params, a final `**`. */
function hostileGroups(): RouteGroups {
  const deep = '/' + Array.from({ length: 200 }, () => '*').join('/');
  const params = '/' + Array.from({ length: 200 }, (_, i) => `:p${i}`).join('/') + '/**';
  const groups: Record<string, { paths: string[] }> = {
    deep: { paths: [deep] },
    params: { paths: [params] },
    literal: { paths: ['/v1/' + 'users/'.repeat(300) + 'y'] },
  };
  // Many groups, each with a near-miss: every request walks all of them.
  for (let i = 0; i < 200; i++) groups[`g${i}`] = { paths: [`/v1/users/*/x${i}/**`, `/a/a/a/a/:x/b${i}`] };
  for (const g of Object.values(groups)) for (const p of g.paths) expect(checkRoutePattern(p)).toBeUndefined();
  return new RouteGroups(groups);
}

/**
 * Median µs of one call of `fn(input)` over `rounds` rounds (after one warm-up): the median, not the
 * maximum, because on a shared machine the maximum measures the neighbours (GC, preemption), while a
 * backtracking regex is slow on every round.
 */
function medianMicros(fn: (input: string) => unknown, input: string, rounds = 31): number {
  fn(input);
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = performance.now();
    fn(input);
    times.push((performance.now() - t) * 1000);
  }
  return times.sort((a, b) => a - b)[rounds >> 1]!;
}

describe('ReDoS: hostile 10 KB inputs against route globs and request parsing', () => {
  it('stays linear and bounded on every input', () => {
    const groups = hostileGroups();
    const trusted = TrustedProxies.from(['loopback']);
    const calls: Record<string, (s: string) => unknown> = {
      normalizePath: (s) => normalizePath(s),
      routeMatch: (s) => groups.match('GET', s),
      forwardedFor: (s) => resolveClientIp('127.0.0.1', s, trusted),
      parseIp: (s) => parseIp(s),
    };
    const forwarded = (size: number): Record<string, string> => ({
      manyHops: '10.0.0.1, '.repeat(Math.ceil(size / 10)).slice(0, size),
      bracketNoClose: '[' + 'a'.repeat(size),
      digitsAndColons: '1.1.1.1:' + '1'.repeat(size),
      v6Colons: ':'.repeat(size),
      commas: ','.repeat(size),
    });
    const rows: { call: string; input: string; us10k: number; us1k: number; ratio: number }[] = [];
    for (const [call, fn] of Object.entries(calls)) {
      const inputs10 = call === 'forwardedFor' || call === 'parseIp' ? forwarded(10_240) : hostilePaths(10_240);
      const inputs1 = call === 'forwardedFor' || call === 'parseIp' ? forwarded(1_024) : hostilePaths(1_024);
      for (const [name, input] of Object.entries(inputs10)) {
        const us10k = medianMicros(fn, input);
        const us1k = medianMicros(fn, inputs1[name]!);
        rows.push({ call, input: name, us10k: Math.round(us10k), us1k: Math.round(us1k), ratio: Math.round((us10k / Math.max(us1k, 1)) * 10) / 10 });
      }
    }
    const worst = rows.reduce((a, b) => (b.us10k > a.us10k ? b : a));
    reportFigure('redos', { medianUsAt10KBWorstInput: worst.us10k, worstCase: `${worst.call}/${worst.input}`, rows });
    // Catastrophic backtracking on 10 KB takes seconds to forever; linear work takes well under 1 ms.
    // 50 ms leaves room for a loaded machine while failing any super-linear blow-up.
    for (const r of rows) expect(r.us10k, `${r.call}/${r.input}`).toBeLessThan(50_000);
    // Results still right on the hostile inputs.
    expect(groups.match('GET', hostilePaths(10_240).manySegments!)).toBe('params'); // 200 one-segment params, then '**'
    expect(groups.match('GET', hostilePaths(10_240).oneLongSegment!)).toBeUndefined();
    expect(groups.match('GET', '/v1/users/7/x3/anything/else')).toBe('g3');
    expect(normalizePath('/' + '%2F'.repeat(3000))).toBe('/');
  });
});
