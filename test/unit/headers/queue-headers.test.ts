// Rate-limit headers of a refused queue submit, exact strings for every header set and format: a
// lane's capacity is the quota, a full lane's drain time the window, nothing remains, and the reset is
// the admission time (rounded up, at least 1 s).
import { describe, expect, it } from 'vitest';
import { serialiseHeaders, type HeaderSelection } from '../../../src/headers/headers.js';
import { queueRefusalFacts, type QueueRefusal } from '../../../src/headers/queue-headers.js';

/** The headers of a refused submit, through the one serialiser. */
const queueRefusalHeaders = (r: QueueRefusal, nowMs: number, selection?: HeaderSelection) => serialiseHeaders(queueRefusalFacts(r, nowMs), selection);

const NOW = 1_700_000_000_300;
/** A lane of 10 drained at 0.5/s (20 s), refused with a wait of 1.04 s. */
const paced = { queue: 'paced', capacity: 10, ratePerSecond: 0.5, retryAfterMs: 1040 };

describe('queue refusal headers', () => {
  it('by default: Retry-After, draft-11 with the whole-second drain window, legacy with an epoch reset', () => {
    expect(queueRefusalHeaders(paced, NOW)).toEqual([
      ['Retry-After', '2'],
      ['RateLimit-Policy', '"paced";q=10;w=20'],
      ['RateLimit', '"paced";r=0;t=2'],
      ['X-RateLimit-Limit', '10'],
      ['X-RateLimit-Remaining', '0'],
      ['X-RateLimit-Reset', String(Math.ceil((NOW + 1040) / 1000))],
    ]);
  });

  it('draft-07, delta-seconds, no Retry-After', () => {
    expect(queueRefusalHeaders(paced, NOW, { retryAfter: false, ietf: 'draft-07', legacyReset: 'delta-seconds' })).toEqual([
      ['RateLimit-Policy', '10;w=20'],
      ['RateLimit', 'limit=10, remaining=0, reset=2'],
      ['X-RateLimit-Limit', '10'],
      ['X-RateLimit-Remaining', '0'],
      ['X-RateLimit-Reset', '2'],
    ]);
  });

  it('a drain time that is not whole seconds has no window: draft-11 leaves out w, draft-07 the policy field', () => {
    const odd = { queue: 'odd', capacity: 3, ratePerSecond: 2, retryAfterMs: 1 };
    expect(queueRefusalHeaders(odd, NOW, { legacy: false })).toEqual([
      ['Retry-After', '1'],
      ['RateLimit-Policy', '"odd";q=3'],
      ['RateLimit', '"odd";r=0;t=1'],
    ]);
    expect(queueRefusalHeaders(odd, NOW, { retryAfter: false, ietf: 'draft-07', legacy: false })).toEqual([['RateLimit', 'limit=3, remaining=0, reset=1']]);
  });

  it('a drain shorter than a second has no window either; no IETF fields when switched off', () => {
    const quick = { queue: 'quick', capacity: 1, ratePerSecond: 4, retryAfterMs: 250 };
    expect(queueRefusalHeaders(quick, NOW, { ietf: 'draft-11', legacy: false })[1]).toEqual(['RateLimit-Policy', '"quick";q=1']);
    expect(queueRefusalHeaders(quick, NOW, { ietf: false })).toEqual([
      ['Retry-After', '1'],
      ['X-RateLimit-Limit', '1'],
      ['X-RateLimit-Remaining', '0'],
      ['X-RateLimit-Reset', String(Math.ceil((NOW + 250) / 1000))],
    ]);
  });
});
