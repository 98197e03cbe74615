// The packed state of the fixed window and the sliding counter (lua/includes/packed.lua): one
// int-encoded integer when it fits, "a:b:c" when it does not, and both forms read back the same.
import { describe, expect, it } from 'vitest';
import { modelFor, parsePolicy, type PolicyInput, type Sluice } from '../../src/index.js';
import { useBackend } from '../helpers/fixtures.js';

const ctx = useBackend('single');

const T0 = 1_796_000_000_123; // an epoch ms of 2026

describe('packed limiter state', () => {
  it.each<[string, PolicyInput]>([
    ['fixed window', { algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }],
    ['sliding counter', { algorithm: 'sliding-counter', limit: 100, windowMs: 60_000 }],
  ])('%s: an ordinary state is stored as an int-encoded integer', async (_what, policy) => {
    const limiter = ctx.sluice.limiter(policy);
    const d = await limiter.limit('int', { nowMs: T0, cost: 7 });
    expect(d.remaining).toBe(93);
    expect(await ctx.backend.raw.object('ENCODING', limiter.keyOf('int'))).toBe('int');
    expect((await limiter.limit('int', { nowMs: T0 + 1 })).remaining).toBe(92);
  });

  it.each<[string, PolicyInput]>([
    ['fixed window', { algorithm: 'fixed-window', limit: 1e12, windowMs: 1 }],
    ['sliding counter', { algorithm: 'sliding-counter', limit: 1e9, windowMs: 1 }],
  ])('%s: counts too long to pack fall back to "a:b" and still decide like the model', async (_what, input) => {
    const policy = parsePolicy(input);
    const limiter = ctx.sluice.limiter(policy);
    const model = modelFor(policy);
    const cost = Math.floor(limiter.maxCost / 3);
    for (const t of [T0, T0, T0 + 0.5, T0 + 1, T0 + 1, T0 + 3]) {
      expect(await limiter.limit('wide', { nowMs: t, cost })).toEqual(model.decide(t, cost));
    }
    expect(await ctx.backend.raw.get(limiter.keyOf('wide'))).toContain(':');
  });

  it('reads a state written in the "index:count" form', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'fixed-window', limit: 10, windowMs: 1_000 });
    const index = Math.floor(T0 / 1_000);
    await ctx.backend.raw.set(limiter.keyOf('old'), `${index}:4`, 'PX', 60_000);
    expect((await limiter.limit('old', { nowMs: T0 })).remaining).toBe(5);
    const sc = ctx.sluice.limiter({ algorithm: 'sliding-counter', limit: 10, windowMs: 1_000 });
    await ctx.backend.raw.set(sc.keyOf('old'), `${index}:4:0`, 'PX', 60_000);
    expect((await sc.limit('old', { nowMs: T0 })).remaining).toBe(5);
  });
});
