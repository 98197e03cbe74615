// The exact vectors of spec.md (F1, S1, S2, C1, T1) on a real Redis with injected time, and the same
// vectors through each algorithm's reference model.
import { describe, expect, it } from 'vitest';
import { modelFor, parsePolicy, type PolicyInput } from '../../src/index.js';
import { SlidingLogModel } from '../../src/limiters/sliding-log.model.js';
import { TOPOLOGIES, useBackend } from '../helpers/fixtures.js';

describe.each(TOPOLOGIES)('spec vectors on %s Redis', (topology) => {
const ctx = useBackend(topology);

const ALLOW = true;
const REJECT = false;

async function replay(policy: PolicyInput, key: string, timesS: number[]) {
  const limiter = ctx.sluice.limiter({ ...policy, timeoutMs: 10_000 });
  const model = modelFor(parsePolicy(policy));
  const out = [];
  for (const t of timesS) {
    const d = await limiter.limit(key, { nowMs: t * 1000 });
    expect(d).toEqual(model.decide(t * 1000, 1));
    out.push(d);
  }
  return out;
}

describe('vectors', () => {
  it('F1: fixed window, limit 5 per 60 s', async () => {
    const times = [0.2, 0.4, 0.9, 58.6, 59.8, 59.9, 60.1, 60.4, 60.7, 61.2];
    const ds = await replay({ algorithm: 'fixed-window', limit: 5, windowMs: 60_000 }, 'f1', times);
    expect(ds.map((d) => d.allowed)).toEqual([ALLOW, ALLOW, ALLOW, ALLOW, ALLOW, REJECT, ALLOW, ALLOW, ALLOW, ALLOW]);
    // The refused call at 59.9 s may retry when window 1 opens at 60 s.
    expect(ds[5]!.retryAfterMs).toBe(100);
    expect(ds.map((d) => d.remaining)).toEqual([4, 3, 2, 1, 0, 0, 4, 3, 2, 1]);
    expect(ds[9]!.resetAtMs).toBe(120_000);
  });

  it('S1: sliding log (accepted only), limit 5 per 60 s', async () => {
    const policy = { algorithm: 'sliding-log', limit: 5, windowMs: 60_000 } as const;
    const times = [0.5, 2.0, 55.0, 58.5, 59.0, 60.2, 62.0];
    const ds = await replay(policy, 's1', times);
    expect(ds.map((d) => d.allowed)).toEqual([ALLOW, ALLOW, ALLOW, ALLOW, ALLOW, REJECT, ALLOW]);
    // At 60.2 s the entry at 0.5 s ages out at 60.5 s.
    expect(ds[5]!.retryAfterMs).toBe(300);
    const limiter = ctx.sluice.limiter(policy);
    expect(await ctx.backend.raw.zcard(limiter.keyOf('s1'))).toBe(4);
    const model = new SlidingLogModel(policy);
    expect(times.map((t) => (model.decide(t * 1000, 1), model.size))).toEqual([1, 2, 3, 4, 5, 5, 4]);
  });

  it('S2: sliding log (log-all), limit 2 per minute', async () => {
    const hour = 3600;
    const times = [hour + 1, hour + 30, hour + 50, hour + 100];
    const ds = await replay({ algorithm: 'sliding-log', limit: 2, windowMs: 60_000, recordRejected: true }, 's2', times);
    expect(ds.map((d) => d.allowed)).toEqual([ALLOW, ALLOW, REJECT, ALLOW]);
    // Refused at 1:00:50 with the log {1:00:01, 1:00:30, 1:00:50}: room once 1:00:01 and 1:00:30 age out.
    expect(ds[2]!.retryAfterMs).toBe(40_000);
  });

  it('C1: sliding counter, limit 7 per minute, previous 5, current 3, at 30%', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'sliding-counter', limit: 7, windowMs: 60_000 });
    for (let i = 0; i < 5; i++) expect((await limiter.limit('c1', { nowMs: 10_000 + i })).allowed).toBe(true);
    for (let i = 0; i < 3; i++) expect((await limiter.limit('c1', { nowMs: 60_000 + i })).allowed).toBe(true);
    const at30 = 60_000 + 18_000;
    const first = await limiter.limit('c1', { nowMs: at30 });
    expect(first.allowed).toBe(true); // 3 + 5 x 0.7 = 6.5 -> 6 < 7
    expect(first.remaining).toBe(0);
    const second = await limiter.limit('c1', { nowMs: at30 });
    expect(second.allowed).toBe(false); // 4 + 5 x 0.7 = 7.5 -> 7, the limit
    // Room for one more needs 4 + floor(5 x (60000 - p) / 60000) <= 6, i.e. 5 x (60000 - p) < 3 x 60000:
    // p > 24000, so the first such instant is p = 24001 ms into the minute.
    expect(second.retryAfterMs).toBe(60_000 + 24_001 - at30);
  });

  it('T1: token bucket, capacity 4, refill 2 per second', async () => {
    const ds = await replay({ algorithm: 'token-bucket', capacity: 4, refillPerSecond: 2 }, 't1', [0, 0, 0, 0, 0, 0.5]);
    expect(ds.map((d) => d.allowed)).toEqual([ALLOW, ALLOW, ALLOW, ALLOW, REJECT, ALLOW]);
    expect(ds[4]!.retryAfterMs).toBe(500);
    expect(Math.ceil(ds[4]!.retryAfterMs / 1000)).toBe(1); // the Retry-After header value
  });
});
});
