// `sluice simulate`: spec vectors F1 and S1 replayed through the reference models with an injected
// clock, printed side by side (a fixed window's boundary burst next to a sliding log's refusal).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelFor } from '../../../src/limiters/model.js';
import { parsePolicy } from '../../../src/limiters/policy.js';
import { cli, cliProcess } from './run-helper.js';

const F1 = '0.2,0.4,0.9,58.6,59.8,59.9,60.1,60.4,60.7,61.2';
const S1 = '0.5,2.0,55.0,58.5,59.0,60.2,62.0';
const both = ['--limit', '5', '--window', '60s', '--compare', 'fixed-window,sliding-log'];

describe('sluice simulate', () => {
  it('F1 times: the fixed window allows 9 (a burst of 5 around the boundary), the sliding log 8', async () => {
    const r = await cli('simulate', ...both, '--times', F1);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(
      [
        'A  fixed-window 5 per 1m',
        'B  sliding-log 5 per 1m',
        ' #   t (s)  A                     B',
        ' 1   0.200  allow   4 left        allow   4 left',
        ' 2   0.400  allow   3 left        allow   3 left',
        ' 3   0.900  allow   2 left        allow   2 left',
        ' 4  58.600  allow   1 left        allow   1 left',
        ' 5  59.800  allow   0 left        allow   0 left',
        ' 6  59.900  REJECT  retry 0.100s  REJECT  retry 0.300s',
        ' 7  60.100  allow   4 left        REJECT  retry 0.100s',
        ' 8  60.400  allow   3 left        allow   1 left',
        ' 9  60.700  allow   2 left        allow   0 left',
        '10  61.200  allow   1 left        allow   0 left',
        'allowed: A 9 of 10, B 8 of 10',
        '',
      ].join('\n'),
    );
  });

  it('S1 times: the sliding log refuses at 60.2 s (nothing has aged 60 s) and allows at 62.0 s', async () => {
    const r = await cli('simulate', ...both, '--times', S1);
    expect(r.stdout).toBe(
      [
        'A  fixed-window 5 per 1m',
        'B  sliding-log 5 per 1m',
        '#   t (s)  A               B',
        '1   0.500  allow   4 left  allow   4 left',
        '2   2.000  allow   3 left  allow   3 left',
        '3  55.000  allow   2 left  allow   2 left',
        '4  58.500  allow   1 left  allow   1 left',
        '5  59.000  allow   0 left  allow   0 left',
        '6  60.200  allow   4 left  REJECT  retry 0.300s',
        '7  62.000  allow   3 left  allow   1 left',
        'allowed: A 7 of 7, B 6 of 7',
        '',
      ].join('\n'),
    );
  });

  it('one policy: a detailed table (F1 through the fixed window)', async () => {
    const r = await cli('simulate', '--algorithm', 'fixed-window', '--limit', '5', '--window', '1m', '--times', F1);
    expect(r.stdout).toBe(
      [
        'fixed-window 5 per 1m',
        ' #   t (s)  result  remaining  retry after (s)  full at (s)',
        ' 1   0.200  allow           4                -       60.000',
        ' 2   0.400  allow           3                -       60.000',
        ' 3   0.900  allow           2                -       60.000',
        ' 4  58.600  allow           1                -       60.000',
        ' 5  59.800  allow           0                -       60.000',
        ' 6  59.900  REJECT          0            0.100       60.000',
        ' 7  60.100  allow           4                -      120.000',
        ' 8  60.400  allow           3                -      120.000',
        ' 9  60.700  allow           2                -      120.000',
        '10  61.200  allow           1                -      120.000',
        'allowed: 9 of 10',
        '',
      ].join('\n'),
    );
  });

  it('T1 through a token bucket given as JSON: four at once, the fifth waits half a second', async () => {
    const r = await cli('simulate', '--policy', '{"algorithm":"token-bucket","capacity":4,"refillPerSecond":2}', '--times', '0,0,0,0,0,0.5');
    expect(r.stdout.split('\n').slice(2, 8)).toEqual([
      '1  0.000  allow           3                -        0.500',
      '2  0.000  allow           2                -        1.000',
      '3  0.000  allow           1                -        1.500',
      '4  0.000  allow           0                -        2.000',
      '5  0.000  REJECT          0            0.500        2.000',
      '6  0.500  allow           0                -        2.500',
    ]);
  });

  it('--json gives every decision, the same as the models decide', async () => {
    const r = await cli('simulate', ...both, '--times', F1, '--json');
    const out = JSON.parse(r.stdout) as { allowed: number[]; cost: number; rows: { t: number; decisions: unknown[] }[]; policies: { label: string; description: string }[] };
    expect(out.allowed).toEqual([9, 8]);
    expect(out.policies.map((p) => `${p.label} ${p.description}`)).toEqual(['A fixed-window 5 per 1m', 'B sliding-log 5 per 1m']);
    const models = [modelFor(parsePolicy({ algorithm: 'fixed-window', limit: 5, windowMs: 60_000 })), modelFor(parsePolicy({ algorithm: 'sliding-log', limit: 5, windowMs: 60_000 }))];
    for (const row of out.rows) expect(row.decisions).toEqual(models.map((m) => m.decide(row.t * 1000, 1)));
  });

  describe('with a times file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-sim-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('reads numbers separated by commas, spaces or lines, with # comments', async () => {
      const file = join(dir, 'times.txt');
      writeFileSync(file, '# spec vector S1\n0.5 2.0\n55.0,58.5\n59.0\n60.2 # refused\n62.0\n');
      const fromFile = await cli('simulate', ...both, '--times-file', file);
      const inline = await cli('simulate', ...both, '--times', S1);
      expect(fromFile.stdout).toBe(inline.stdout);
    });
  });

  it.each([
    [['--times', '1'], 'simulate: give a policy: --policy JSON, --algorithm NAME or --compare NAME,NAME'],
    [['-a', 'fixed-window', '--limit', '5', '--window', '60'], "simulate: --window: '60' is not a duration: use a number and a unit"],
    [['-a', 'fixed-window', '--limit', '5', '--window', '1m', '--times', '2,1'], 'simulate: times must not go backwards (2 then 1)'],
    [['-a', 'fixed-window', '--limit', '5', '--window', '1m'], 'simulate: give exactly one of --times or --times-file'],
    [['-a', 'fixed-window', '--limit', '5', '--window', '1m', '--times', '1', '--cost', '6'], "simulate: --cost 6 is larger than fixed-window's limit 5"],
    [['--compare', 'fixed-window,bogus', '--limit', '5', '--window', '1m', '--times', '1'], "simulate: unknown algorithm 'bogus'"],
    [['-a', 'fixed-window', '--window', '1m', '--times', '1'], 'simulate: --algorithm fixed-window: invalid policy: limit:'],
    [['--policy', '{nope', '--times', '1'], 'simulate: --policy #1 is not JSON'],
  ])('refuses %j', async (args, message) => {
    const r = await cli('simulate', ...args);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(message);
  });

  it('as a process: the bin prints the same table and exits 0; a usage error exits 2', () => {
    const r = cliProcess(['simulate', ...both, '--times', F1]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(' 7  60.100  allow   4 left        REJECT  retry 0.100s');
    expect(r.stdout).toContain('allowed: A 9 of 10, B 8 of 10');
    const bad = cliProcess(['simulate', '--algorithm', 'adaptive']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("argument 'adaptive' is invalid");
  });
});
