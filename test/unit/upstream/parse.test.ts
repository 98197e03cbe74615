// The upstream header parsers on exact vectors of every style, and on any string: never a throw.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, goDuration, headerSource, parseRetryAfter, parseUpstreamHeaders, resetFromNow } from '../../../src/upstream/index.js';

const NOW = 1_800_000_000_000; // 2027-01-15T08:00:00Z
const parse = (headers: Record<string, string>) => parseUpstreamHeaders(headerSource(headers), NOW);

describe('IETF RateLimit headers', () => {
  it('drafts 8-10: a policy list and a RateLimit list; the limit comes from the named policy', () => {
    expect(parse({ 'RateLimit-Policy': '"default";q=100;w=60', RateLimit: '"default";r=50;t=30' })).toEqual({
      signal: { limit: 100, remaining: 50, resetMs: 30_000 },
      ignored: [],
      style: 'ietf',
    });
  });

  it('drafts 8-10: with several policies the tightest counts (largest reset per unit left)', () => {
    const got = parse({ 'RateLimit-Policy': '"burst";q=10;w=1, "day";q=1000;w=86400', RateLimit: '"burst";r=9;t=1, "day";r=20;t=3600' });
    // burst: 1000 ms / 9 = 111 ms per unit; day: 3,600,000 ms / 20 = 180,000 ms per unit
    expect(got.signal).toEqual({ limit: 1000, remaining: 20, resetMs: 3_600_000 });
  });

  it('drafts 8-10: a used-up policy wins over any other; a token name and no policy header work too', () => {
    expect(parse({ RateLimit: 'a;r=5;t=100, b;r=0;t=2' }).signal).toEqual({ remaining: 0, resetMs: 2000 });
  });

  it('draft 7: a dictionary with limit, remaining, reset', () => {
    expect(parse({ RateLimit: 'limit=100, remaining=50, reset=30', 'RateLimit-Policy': '100;w=60' })).toEqual({
      signal: { limit: 100, remaining: 50, resetMs: 30_000 },
      ignored: [],
      style: 'ietf-draft7',
    });
    // The limit from the policy when the dictionary has none.
    expect(parse({ RateLimit: 'remaining=5, reset=1', 'RateLimit-Policy': '10;w=1' }).signal).toEqual({ limit: 10, remaining: 5, resetMs: 1000 });
  });

  it('drafts 0-6: separate RateLimit-Limit / -Remaining / -Reset (delta seconds)', () => {
    expect(parse({ 'RateLimit-Limit': '100, 100;w=60', 'RateLimit-Remaining': '7', 'RateLimit-Reset': '12' })).toEqual({
      signal: { limit: 100, remaining: 7, resetMs: 12_000 },
      ignored: [],
      style: 'ietf-separate',
    });
  });

  it('malformed, negative and contradictory values are ignored with a reason', () => {
    expect(parse({ RateLimit: '"a";r=;t=1' })).toEqual({ signal: {}, ignored: [{ header: 'RateLimit', reason: 'malformed' }] });
    expect(parse({ RateLimit: '"a";r=-3;t=1' }).ignored).toEqual([{ header: 'RateLimit', reason: 'negative' }]);
    expect(parse({ RateLimit: 'limit=10, remaining=11, reset=1' })).toEqual({ signal: {}, ignored: [{ header: 'RateLimit', reason: 'inconsistent' }] });
    expect(parse({ RateLimit: '"a";r=5;t=99999999999' })).toEqual({ signal: { remaining: 5 }, ignored: [{ header: 'RateLimit', reason: 'absurd' }], style: 'ietf' });
  });
});

describe('X-RateLimit-*', () => {
  it('reset as epoch seconds (GitHub), fractional epoch seconds, epoch ms, or delta seconds: detected', () => {
    const base = { 'X-RateLimit-Limit': '5000', 'X-RateLimit-Remaining': '4990' };
    expect(parse({ ...base, 'X-RateLimit-Reset': String(NOW / 1000 + 1800) })).toEqual({
      signal: { limit: 5000, remaining: 4990, resetMs: 1_800_000 },
      ignored: [],
      style: 'x-ratelimit',
    });
    expect(parse({ ...base, 'X-RateLimit-Reset': String(NOW / 1000 + 1.25) }).signal.resetMs).toBe(1250);
    expect(parse({ ...base, 'X-RateLimit-Reset': String(NOW + 700) }).signal.resetMs).toBe(700);
    expect(parse({ ...base, 'X-RateLimit-Reset': '60' }).signal.resetMs).toBe(60_000);
  });

  it('a reset just past (skew) is 0; long past, absurdly far, or garbage is ignored', () => {
    expect(resetFromNow(String(NOW / 1000 - 2), NOW)).toEqual({ ok: true, value: 0 });
    expect(resetFromNow(String(NOW / 1000 - 3600), NOW)).toEqual({ ok: false, reason: 'in_the_past' });
    expect(resetFromNow(String(NOW / 1000 + 365 * 86400), NOW)).toEqual({ ok: false, reason: 'absurd' });
    expect(resetFromNow('soon', NOW)).toEqual({ ok: false, reason: 'malformed' });
    expect(resetFromNow('-5', NOW)).toEqual({ ok: false, reason: 'negative' });
  });

  it('a remaining above the limit is a contradiction: no budget', () => {
    expect(parse({ 'X-RateLimit-Limit': '10', 'X-RateLimit-Remaining': '50', 'X-RateLimit-Reset': '3' })).toEqual({
      signal: {},
      ignored: [{ header: 'X-RateLimit-Remaining', reason: 'inconsistent' }],
    });
  });
});

describe('Retry-After', () => {
  it('seconds or an HTTP date; a past date is 0; over a day is capped (and flagged)', () => {
    expect(parseRetryAfter('120', NOW)).toEqual({ ok: true, value: 120_000 });
    expect(parseRetryAfter(new Date(NOW + 30_000).toUTCString(), NOW)).toEqual({ ok: true, value: 30_000 });
    expect(parseRetryAfter(new Date(NOW - 30_000).toUTCString(), NOW)).toEqual({ ok: true, value: 0 });
    expect(parse({ 'Retry-After': String(3 * 86400) })).toEqual({ signal: { retryAfterMs: MAX_RETRY_AFTER_MS }, ignored: [{ header: 'Retry-After', reason: 'capped' }] });
    expect(parse({ 'Retry-After': '99999999999999999999' }).signal.retryAfterMs).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('-1', NOW)).toEqual({ ok: false, reason: 'negative' });
    expect(parseRetryAfter('2024', NOW)).toEqual({ ok: true, value: 2_024_000 });
    expect(parseRetryAfter('tomorrow', NOW)).toEqual({ ok: false, reason: 'malformed' });
    expect(parseRetryAfter('1.5', NOW)).toEqual({ ok: true, value: 1500 }); // Shopify sends 2.0
    expect(parseRetryAfter('1.', NOW)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('rides along with a budget', () => {
    expect(parse({ 'X-RateLimit-Remaining': '0', 'X-RateLimit-Reset': '4', 'Retry-After': '4' }).signal).toEqual({ remaining: 0, resetMs: 4000, retryAfterMs: 4000 });
  });
});

describe('Shopify call limit', () => {
  it('level/size: remaining is size - level, reset the time the bucket drains from that level (size per 20 s)', () => {
    expect(parse({ 'X-Shopify-Shop-Api-Call-Limit': '32/40' })).toEqual({ signal: { limit: 40, remaining: 8, resetMs: 16_000 }, ignored: [], style: 'shopify' });
    expect(parse({ 'X-Shopify-Shop-Api-Call-Limit': '0/40' }).signal).toEqual({ limit: 40, remaining: 40, resetMs: 0 });
    expect(parse({ 'X-Shopify-Shop-Api-Call-Limit': '1/400' }).signal).toEqual({ limit: 400, remaining: 399, resetMs: 50 });
  });

  it('garbage, negatives and a level above the size are ignored', () => {
    expect(parse({ 'X-Shopify-Shop-Api-Call-Limit': '32' }).ignored).toEqual([{ header: 'X-Shopify-Shop-Api-Call-Limit', reason: 'malformed' }]);
    expect(parse({ 'X-Shopify-Shop-Api-Call-Limit': '-1/40' }).ignored).toEqual([{ header: 'X-Shopify-Shop-Api-Call-Limit', reason: 'negative' }]);
    expect(parse({ 'X-Shopify-Shop-Api-Call-Limit': '41/40' }).ignored).toEqual([{ header: 'X-Shopify-Shop-Api-Call-Limit', reason: 'inconsistent' }]);
    expect(parse({ 'X-Shopify-Shop-Api-Call-Limit': '0/0' }).ignored).toEqual([{ header: 'X-Shopify-Shop-Api-Call-Limit', reason: 'inconsistent' }]);
  });
});

describe('OpenAI-style budgets', () => {
  it('Go durations', () => {
    expect(goDuration('6m0s')).toEqual({ ok: true, value: 360_000 });
    expect(goDuration('1s')).toEqual({ ok: true, value: 1000 });
    expect(goDuration('20ms')).toEqual({ ok: true, value: 20 });
    expect(goDuration('1h2m3.5s')).toEqual({ ok: true, value: 3_723_500 });
    expect(goDuration('0.25ms')).toEqual({ ok: true, value: 1 });
    expect(goDuration('6 m')).toEqual({ ok: false, reason: 'malformed' });
    expect(goDuration('-1s')).toEqual({ ok: false, reason: 'negative' });
    expect(goDuration('9999h')).toEqual({ ok: false, reason: 'absurd' });
  });

  it('the requests budget paces; a used-up tokens budget holds until its reset', () => {
    const base = { 'x-ratelimit-limit-requests': '60', 'x-ratelimit-remaining-requests': '59', 'x-ratelimit-reset-requests': '1s', 'x-ratelimit-limit-tokens': '150000' };
    expect(parse({ ...base, 'x-ratelimit-remaining-tokens': '149984', 'x-ratelimit-reset-tokens': '6m0s' })).toEqual({
      signal: { limit: 60, remaining: 59, resetMs: 1000 },
      ignored: [],
      style: 'openai',
    });
    expect(parse({ ...base, 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '20ms' }).signal).toEqual({ remaining: 0, resetMs: 20 });
  });
});

describe('precedence and bad input', () => {
  it('IETF before X-RateLimit before OpenAI before Shopify', () => {
    expect(parse({ RateLimit: '"a";r=1;t=1', 'X-RateLimit-Remaining': '9', 'X-Shopify-Shop-Api-Call-Limit': '1/40' }).style).toBe('ietf');
    expect(parse({ 'X-RateLimit-Remaining': '9', 'X-Shopify-Shop-Api-Call-Limit': '1/40' }).style).toBe('x-ratelimit');
  });

  it('no rate-limit headers: an empty signal', () => {
    expect(parse({ 'Content-Type': 'application/json' })).toEqual({ signal: {}, ignored: [] });
  });

  const NAMES = ['RateLimit', 'RateLimit-Policy', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'Retry-After', 'X-Shopify-Shop-Api-Call-Limit', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests', 'x-ratelimit-remaining-tokens', 'x-ratelimit-reset-tokens'];
  const value = fc.oneof(fc.string(), fc.stringMatching(/^[-\d.,;=" a-z/]{0,30}$/), fc.double().map(String), fc.integer().map(String));

  it('never throws on any header values, and what it returns is finite, non-negative and within the caps', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...NAMES), value), (headers) => {
        const { signal } = parse(headers);
        for (const v of Object.values(signal)) expect(Number.isFinite(v) && v >= 0).toBe(true);
        if (signal.retryAfterMs !== undefined) expect(signal.retryAfterMs).toBeLessThanOrEqual(MAX_RETRY_AFTER_MS);
        if (signal.limit !== undefined && signal.remaining !== undefined) expect(signal.remaining).toBeLessThanOrEqual(signal.limit);
      }),
      { numRuns: 2000 },
    );
  });
});
