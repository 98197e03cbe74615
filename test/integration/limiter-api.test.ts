// The limiter API around the decision: peek never charges, reset forgets, cost is checked, the
// client clock source, concurrency leases (release, extend, expiry), and no raw secret in Redis.
import { describe, expect, it } from 'vitest';
import { ManualClock, isSluiceError, type Sluice } from '../../src/index.js';
import { uniquePrefix, useBackend } from '../helpers/fixtures.js';

const ctx = useBackend('single');

describe('limiter API', () => {
  it('peek reports the state without charging', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'fixed-window', limit: 3, windowMs: 60_000 });
    await limiter.limit('p', { nowMs: 1_000 });
    for (let i = 0; i < 5; i++) expect(await limiter.peek('p', { nowMs: 1_000 })).toMatchObject({ allowed: true, remaining: 2 });
    expect(await limiter.peek('p', { nowMs: 1_000, cost: 3 })).toMatchObject({ allowed: false, retryAfterMs: 59_000 });
    expect((await limiter.limit('p', { nowMs: 1_000 })).remaining).toBe(1);
  });

  it('reset forgets a key', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'token-bucket', capacity: 2, refillPerSecond: 0.001 });
    await limiter.limit('r', { nowMs: 0 });
    await limiter.limit('r', { nowMs: 0 });
    expect((await limiter.limit('r', { nowMs: 0 })).allowed).toBe(false);
    await limiter.reset('r');
    expect(await limiter.limit('r', { nowMs: 0 })).toMatchObject({ allowed: true, remaining: 1 });
  });

  it.each([
    [0, 'an integer >= 1'],
    [-2, 'an integer >= 1'],
    [1.5, 'an integer >= 1'],
    [6, 'larger than the policy'],
  ])('refuses cost %s with a clear error, charging nothing', async (cost, text) => {
    const limiter = ctx.sluice.limiter({ algorithm: 'sliding-log', limit: 5, windowMs: 1_000 });
    let error: unknown;
    try {
      await limiter.limit('c', { cost, nowMs: 0 });
    } catch (e) {
      error = e;
    }
    expect(isSluiceError(error, 'SLUICE_ERR_INVALID_COST')).toBe(true);
    expect((error as Error).message).toContain(text);
    expect((await limiter.peek('c', { nowMs: 0 })).remaining).toBe(5);
  });

  it("clock 'client': decisions follow this process's clock (for Redis that refuses TIME)", async () => {
    const clock = new ManualClock(5_000);
    const s = ctx.backend.sluice({ clock: 'client', clockImpl: clock, prefix: uniquePrefix() });
    const limiter = s.limiter({ algorithm: 'fixed-window', limit: 1, windowMs: 10_000 });
    expect((await limiter.limit('k')).allowed).toBe(true);
    expect(await limiter.limit('k')).toMatchObject({ allowed: false, retryAfterMs: 5_000, resetAtMs: 10_000 });
    clock.set(10_000);
    expect((await limiter.limit('k')).allowed).toBe(true);
  });

  it('concurrency: a lease is released, extended, or reclaimed after leaseMs', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'concurrency', limit: 2, leaseMs: 1_000 });
    const a = await limiter.limit('job', { nowMs: 0 });
    const b = await limiter.limit('job', { nowMs: 0 });
    expect(a.leaseId && b.leaseId).toBeTruthy();
    expect(await limiter.limit('job', { nowMs: 10 })).toMatchObject({ allowed: false, retryAfterMs: 990 });
    expect(await limiter.release('job', a.leaseId!)).toBe(true);
    expect(await limiter.release('job', a.leaseId!)).toBe(false); // already released
    expect((await limiter.limit('job', { nowMs: 20 })).allowed).toBe(true);
    expect(await limiter.extend('job', b.leaseId!, { nowMs: 900 })).toBe(true); // b now lives until 1,900
    expect((await limiter.limit('job', { nowMs: 1_500 })).allowed).toBe(true); // the one taken at 20 expired at 1,020
    expect(await limiter.limit('job', { nowMs: 1_500 })).toMatchObject({ allowed: false });
    expect(await limiter.extend('job', b.leaseId!, { nowMs: 2_000 })).toBe(false); // b expired at 1,900
  });

  it('release and extend belong to concurrency limiters', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'token-bucket', capacity: 2, refillPerSecond: 1 });
    await expect(limiter.release('k', 'x')).rejects.toMatchObject({ code: 'SLUICE_ERR_WRONG_ALGORITHM' });
  });

  it('a sensitive key never reaches Redis raw', async () => {
    const s = ctx.backend.sluice({ prefix: uniquePrefix() });
    const apiKey = 'sk_live_4f9a8b7c';
    for (const policy of [
      { algorithm: 'token-bucket', capacity: 5, refillPerSecond: 1 },
      { algorithm: 'sliding-log', limit: 5, windowMs: 1_000 },
      { algorithm: 'concurrency', limit: 5, leaseMs: 1_000 },
    ] as const) {
      await s.limiter(policy).limit(apiKey, { sensitive: true });
    }
    const keys = await ctx.backend.raw.keys(`${s.keys.prefix}:*`);
    expect(keys.length).toBe(3);
    for (const k of keys) expect(k).not.toContain(apiKey);
  });

  it('an identity with `:` is kept verbatim in its key (layout 2) and shares state with no other identity', async () => {
    const s = ctx.backend.sluice({ prefix: uniquePrefix() });
    const limiter = s.limiter({ name: 'api', algorithm: 'fixed-window', limit: 1, windowMs: 60_000 });
    // Identities that are prefixes of one another or differ only after a `:` keep separate state.
    for (const id of ['u:1', 'u:2', 'u', '1', 'u:1:x']) expect((await limiter.limit(id, { nowMs: 1_000 })).allowed).toBe(true);
    for (const id of ['u:1', 'u:2', 'u', '1', 'u:1:x']) expect((await limiter.limit(id, { nowMs: 1_000 })).allowed).toBe(false);
    expect(limiter.keyOf('u:1')).toBe(`${s.keys.prefix}:2{api:u:1}f`);
    expect(await ctx.backend.raw.exists(limiter.keyOf('u:1'))).toBe(1);
    expect((await ctx.backend.raw.keys(`${s.keys.prefix}:*`)).sort()).toEqual(['u:1', 'u:2', 'u', '1', 'u:1:x'].map((id) => limiter.keyOf(id)).sort());
  });
});
