// Rate-limit headers from real decisions (the reference models of each algorithm), with exact
// expected strings: the values must be true for the algorithm that decided.
import { describe, expect, it } from 'vitest';
import {
  ietfDraft07Headers,
  ietfDraft11Headers,
  legacyHeaders,
  quotaView,
  rateLimitHeaders,
  retryAfterHeaders,
  type HeaderInput,
} from '../../../src/headers/headers.js';
import type { Decision } from '../../../src/limiters/decision.js';
import { modelFor } from '../../../src/limiters/model.js';
import { parsePolicy, type PolicyInput } from '../../../src/limiters/policy.js';

/** Replays `timesS` through the policy's model; returns the input for the last call and its instant. */
function lastDecision(name: string, policyInput: PolicyInput, timesS: number[], cost = 1): { input: HeaderInput; nowMs: number } {
  const policy = parsePolicy(policyInput);
  const model = modelFor(policy);
  let decision: Decision | undefined;
  for (const t of timesS) decision = model.decide(t * 1000, cost);
  return { input: { decision: decision!, policy, name, cost }, nowMs: timesS[timesS.length - 1]! * 1000 };
}

const F1 = [0.2, 0.4, 0.9, 58.6, 59.8, 59.9];
const fixed = { algorithm: 'fixed-window', limit: 5, windowMs: 60_000 } as const;

describe('fixed window (spec vector F1)', () => {
  it('refused at 59.9 s: one more unit when the window ends 0.1 s later', () => {
    const { input, nowMs } = lastDecision('per-ip', fixed, F1);
    expect(retryAfterHeaders([input])).toEqual([['Retry-After', '1']]);
    expect(ietfDraft11Headers([input], nowMs)).toEqual([
      ['RateLimit-Policy', '"per-ip";q=5;w=60'],
      ['RateLimit', '"per-ip";r=0;t=1'],
    ]);
    expect(ietfDraft07Headers([input], nowMs)).toEqual([
      ['RateLimit-Policy', '5;w=60'],
      ['RateLimit', 'limit=5, remaining=0, reset=1'],
    ]);
    expect(legacyHeaders([input], nowMs)).toEqual([
      ['X-RateLimit-Limit', '5'],
      ['X-RateLimit-Remaining', '0'],
      ['X-RateLimit-Reset', '60'],
    ]);
    expect(legacyHeaders([input], nowMs, 'delta-seconds')[2]).toEqual(['X-RateLimit-Reset', '1']);
  });

  it('allowed at 0.2 s: 4 left for the 60 s until the window ends', () => {
    const { input, nowMs } = lastDecision('per-ip', fixed, [0.2]);
    expect(retryAfterHeaders([input])).toEqual([]);
    expect(ietfDraft11Headers([input], nowMs)[1]).toEqual(['RateLimit', '"per-ip";r=4;t=60']);
  });

  it('a window that is not whole seconds has no w', () => {
    const { input, nowMs } = lastDecision('w', { algorithm: 'fixed-window', limit: 3, windowMs: 1500 }, [0.1]);
    expect(ietfDraft11Headers([input], nowMs)).toEqual([
      ['RateLimit-Policy', '"w";q=3'],
      ['RateLimit', '"w";r=2;t=2'],
    ]);
    // draft-07 requires w: no policy item, but the RateLimit dictionary still says what is left.
    expect(ietfDraft07Headers([input], nowMs)).toEqual([['RateLimit', 'limit=3, remaining=2, reset=2']]);
  });
});

describe('token bucket (spec vector T1: capacity 4, 2 tokens/s)', () => {
  const tb = { algorithm: 'token-bucket', capacity: 4, refillPerSecond: 2 } as const;

  it('the fifth call at t=0 is refused; the next token comes in 0.5 s, the bucket is full at 2 s', () => {
    const { input, nowMs } = lastDecision('per-key', tb, [0, 0, 0, 0, 0]);
    expect(input.decision).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 500, resetAtMs: 2000 });
    expect(rateLimitHeaders([input], nowMs)).toEqual([
      ['Retry-After', '1'],
      // The policy window is capacity / refill = 2 s.
      ['RateLimit-Policy', '"per-key";q=4;w=2'],
      ['RateLimit', '"per-key";r=0;t=1'],
      ['X-RateLimit-Limit', '4'],
      ['X-RateLimit-Remaining', '0'],
      // "Reset" of a token bucket: when it is full again.
      ['X-RateLimit-Reset', '2'],
    ]);
  });

  it('after one call: 3 left, one more token in 0.5 s (rounded up to 1)', () => {
    const { input, nowMs } = lastDecision('per-key', tb, [0]);
    expect(ietfDraft11Headers([input], nowMs)[1]).toEqual(['RateLimit', '"per-key";r=3;t=1']);
  });

  it('time to the next token counts from a partly refilled bucket', () => {
    // capacity 10, 1 token/s: 10 calls at 0, then at 2.4 s two tokens are back and one is taken.
    const { input, nowMs } = lastDecision('slow', { algorithm: 'token-bucket', capacity: 10, refillPerSecond: 1 }, [...Array<number>(10).fill(0), 2.4]);
    expect(input.decision.remaining).toBe(1);
    // The next token arrives at 3.0 s: 0.6 s from now.
    expect(quotaView(input, nowMs)).toMatchObject({ remaining: 1, nextSeconds: 1, windowSeconds: 10 });
  });

  it('a full bucket gains nothing by waiting: no t; a refill rate that does not divide the capacity: no w', () => {
    const policy = parsePolicy({ algorithm: 'token-bucket', capacity: 10, refillPerSecond: 3 });
    const decision = modelFor(policy).decide(0, 1, false);
    expect(ietfDraft11Headers([{ decision, policy, name: 'tb' }], 0)).toEqual([
      ['RateLimit-Policy', '"tb";q=10'],
      ['RateLimit', '"tb";r=10'],
    ]);
  });
});

describe('sliding log (spec vector S1) and sliding counter', () => {
  const log = { algorithm: 'sliding-log', limit: 5, windowMs: 60_000 } as const;

  it('refused at 60.2 s: the entry of 0.5 s ages out 0.3 s later', () => {
    const { input, nowMs } = lastDecision('log', log, [0.5, 2.0, 55.0, 58.5, 59.0, 60.2]);
    expect(input.decision.retryAfterMs).toBe(300);
    expect(ietfDraft11Headers([input], nowMs)).toEqual([
      ['RateLimit-Policy', '"log";q=5;w=60'],
      ['RateLimit', '"log";r=0;t=1'],
    ]);
  });

  it('allowed: when more quota frees is unknown to the decision, so no t', () => {
    const { input, nowMs } = lastDecision('log', log, [0.5, 2.0]);
    expect(ietfDraft11Headers([input], nowMs)[1]).toEqual(['RateLimit', '"log";r=3']);
  });

  it('a refused call of cost 2 only bounds the time to one more unit: no t', () => {
    const { input, nowMs } = lastDecision('log', log, [0, 0, 0, 0, 1], 2);
    expect(input.decision.allowed).toBe(false);
    expect(ietfDraft11Headers([input], nowMs)[1]).toEqual(['RateLimit', '"log";r=1']);
  });

  it('sliding counter (vector C1 shape): refused with the exact retry for cost 1', () => {
    const counter = { algorithm: 'sliding-counter', limit: 7, windowMs: 60_000 } as const;
    const times = [10, 10.001, 10.002, 10.003, 10.004, 60, 60.001, 60.002, 78, 78];
    const { input, nowMs } = lastDecision('ctr', counter, times);
    expect(input.decision).toMatchObject({ allowed: false, retryAfterMs: 6_001 });
    expect(rateLimitHeaders([input], nowMs, { legacy: false })).toEqual([
      ['Retry-After', '7'],
      ['RateLimit-Policy', '"ctr";q=7;w=60'],
      ['RateLimit', '"ctr";r=0;t=7'],
    ]);
  });
});

describe('leaky bucket (GCRA) and concurrency', () => {
  it('GCRA 1/s with burst 2: q is burst + 1, w the time to drain it, t the next slot', () => {
    const { input, nowMs } = lastDecision('meter', { algorithm: 'leaky-bucket', ratePerSecond: 1, burst: 2 }, [0]);
    expect(ietfDraft11Headers([input], nowMs)).toEqual([
      ['RateLimit-Policy', '"meter";q=3;w=3'],
      ['RateLimit', '"meter";r=2;t=1'],
    ]);
  });

  it('GCRA refused: retry and next slot agree', () => {
    const { input, nowMs } = lastDecision('meter', { algorithm: 'leaky-bucket', ratePerSecond: 2, burst: 0 }, [0, 0.1]);
    expect(input.decision).toMatchObject({ allowed: false, retryAfterMs: 400 });
    expect(rateLimitHeaders([input], nowMs, { legacy: false })).toEqual([
      ['Retry-After', '1'],
      ['RateLimit-Policy', '"meter";q=1'],
      ['RateLimit', '"meter";r=0;t=1'],
    ]);
  });

  it('concurrency: counted in concurrent requests, no window, no time (a release can come any moment)', () => {
    const { input, nowMs } = lastDecision('exports', { algorithm: 'concurrency', limit: 2, leaseMs: 30_000 }, [0, 1, 2]);
    expect(input.decision.allowed).toBe(false);
    expect(rateLimitHeaders([input], nowMs)).toEqual([
      ['Retry-After', '28'],
      ['RateLimit-Policy', '"exports";q=2;qu="concurrent-requests"'],
      ['RateLimit', '"exports";r=0'],
      ['X-RateLimit-Limit', '2'],
      ['X-RateLimit-Remaining', '0'],
      ['X-RateLimit-Reset', '31'],
    ]);
  });
});

describe('several decisions', () => {
  const key = lastDecision('per-key', { algorithm: 'token-bucket', capacity: 10, refillPerSecond: 1 }, [0, 0, 0]);
  const ip = lastDecision('per-ip', fixed, [...F1.slice(0, 5), 0.95]);
  const nowMs = 950;

  it('the most restrictive first: refused before allowed, then lowest remaining; legacy describes it', () => {
    const inputs = [key.input, ip.input];
    expect(ip.input.decision.allowed).toBe(false);
    expect(rateLimitHeaders(inputs, nowMs)).toEqual([
      ['Retry-After', '60'],
      ['RateLimit-Policy', '"per-ip";q=5;w=60, "per-key";q=10;w=10'],
      ['RateLimit', '"per-ip";r=0;t=60, "per-key";r=7;t=1'],
      ['X-RateLimit-Limit', '5'],
      ['X-RateLimit-Remaining', '0'],
      ['X-RateLimit-Reset', '60'],
    ]);
  });

  it('Retry-After is the longest wait among the refusals (the request needs them all)', () => {
    const a: HeaderInput = { ...key.input, decision: { ...key.input.decision, allowed: false, remaining: 0, retryAfterMs: 2_500 } };
    const b: HeaderInput = { ...ip.input, decision: { ...ip.input.decision, allowed: false, remaining: 0, retryAfterMs: 1_200 } };
    expect(retryAfterHeaders([b, a])).toEqual([['Retry-After', '3']]);
    // Equal remaining: the longer retry is the more restrictive.
    expect(legacyHeaders([b, a], nowMs)[0]).toEqual(['X-RateLimit-Limit', '10']);
  });

  it('draft-07 lists each quota once (two policies with one quota are invalid there)', () => {
    const other = lastDecision('other', { algorithm: 'sliding-log', limit: 5, windowMs: 3_600_000 }, [0.95]);
    expect(ietfDraft07Headers([ip.input, other.input], nowMs)).toEqual([
      ['RateLimit-Policy', '5;w=60'],
      ['RateLimit', 'limit=5, remaining=0, reset=60'],
    ]);
  });
});

describe('decisions Redis did not make', () => {
  const policy = parsePolicy(fixed);
  const failClosed: HeaderInput = {
    policy,
    name: 'p',
    decision: { allowed: false, limit: 5, remaining: 0, retryAfterMs: 1000, resetAtMs: 5000, failure: 'fail-closed' },
  };
  const failOpen: HeaderInput = { ...failClosed, decision: { ...failClosed.decision, allowed: true, retryAfterMs: 0, failure: 'fail-open' } };

  it('fail-closed: Retry-After only, no quota fields', () => {
    expect(rateLimitHeaders([failClosed], 5000)).toEqual([['Retry-After', '1']]);
  });

  it('fail-open: nothing at all', () => {
    expect(rateLimitHeaders([failOpen], 5000)).toEqual([]);
  });

  it('beside a real decision, only the real one is described', () => {
    const { input, nowMs } = lastDecision('real', fixed, [0.2]);
    expect(rateLimitHeaders([failOpen, input], nowMs, { retryAfter: false, legacy: false })).toEqual([
      ['RateLimit-Policy', '"real";q=5;w=60'],
      ['RateLimit', '"real";r=4;t=60'],
    ]);
  });
});

describe('formatting details', () => {
  it('Retry-After rounds up and is at least 1', () => {
    const base = lastDecision('p', fixed, [0.2]).input;
    const refused = (ms: number): HeaderInput => ({ ...base, decision: { ...base.decision, allowed: false, retryAfterMs: ms } });
    expect([1, 999, 1000, 1001, 0].map((ms) => retryAfterHeaders([refused(ms)])[0]![1])).toEqual(['1', '1', '1', '2', '1']);
  });

  it('policy names are Structured Field strings; partition keys are byte sequences', () => {
    const { input, nowMs } = lastDecision('a"b\\c\u00e9', fixed, [0.2]);
    expect(ietfDraft11Headers([{ ...input, partitionKey: 'abc' }], nowMs)).toEqual([
      ['RateLimit-Policy', '"a\\"b\\\\c_";q=5;w=60;pk=:YWJj:'],
      ['RateLimit', '"a\\"b\\\\c_";r=4;t=60;pk=:YWJj:'],
    ]);
  });

  it('each set is switchable', () => {
    const { input, nowMs } = lastDecision('p', fixed, F1);
    const names = (s: Parameters<typeof rateLimitHeaders>[2]) => rateLimitHeaders([input], nowMs, s).map(([n]) => n);
    expect(names({})).toEqual(['Retry-After', 'RateLimit-Policy', 'RateLimit', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']);
    expect(names({ retryAfter: false, legacy: false })).toEqual(['RateLimit-Policy', 'RateLimit']);
    expect(names({ ietf: false })).toEqual(['Retry-After', 'X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']);
    expect(rateLimitHeaders([input], nowMs, { ietf: 'draft-07', retryAfter: false, legacy: false })).toEqual(ietfDraft07Headers([input], nowMs));
    expect(rateLimitHeaders([], nowMs)).toEqual([]);
  });
});
