// The division of a sharded throttle's global cap (src/throttle/shares.ts) and the shard layout
// (src/throttle/shards.ts): pure functions, checked exactly and on random inputs.
import calculateSlot from 'cluster-key-slot';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseThrottleConfig } from '../../../src/throttle/config.js';
import { divideCap } from '../../../src/throttle/shares.js';
import { shardJobId, shardOfJob, shardOfLane, shardSuffix } from '../../../src/throttle/shards.js';

describe('divideCap', () => {
  it('gives every lane the same fraction of its rate, the idle shards 1 a second', () => {
    expect(divideCap(100, [20, 180, 0])).toEqual([10, 89, 1]);
    expect(divideCap(100, [20, 180, 100])).toEqual([7, 60, 33]);
  });

  it('spreads what demand leaves over evenly', () => {
    expect(divideCap(100, [20, 0, 0])).toEqual([46, 27, 27]);
    expect(divideCap(90, [0, 0, 0])).toEqual([30, 30, 30]);
  });

  it('refuses a cap below one start per second per shard', () => {
    expect(() => divideCap(2, [1, 1, 1])).toThrow(RangeError);
  });

  it('on random demands: whole shares of at least 1, summing to floor(cap), none below its demand when the cap covers all, proportional otherwise', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.double({ min: 0, max: 1e5, noNaN: true }), fc.array(fc.double({ min: 0, max: 1e5, noNaN: true }), { minLength: 64, maxLength: 64 }), (n, extra, pool) => {
        const cap = n + extra;
        const demands = pool.slice(0, n);
        const shares = divideCap(cap, demands);
        expect(shares.length).toBe(n);
        for (const s of shares) expect(Number.isInteger(s) && s >= 1).toBe(true);
        expect(shares.reduce((a, s) => a + s, 0)).toBe(Math.floor(cap));
        const sum = demands.reduce((a, d) => a + d, 0);
        const lambda = sum > 0 ? Math.min(1, Math.floor(cap) / sum) : 0;
        // Each share is within one start a second of its fair part (a floor of 1 taken from the largest),
        // or above it (what demand left over).
        demands.forEach((d, i) => expect(shares[i]!).toBeGreaterThanOrEqual(Math.min(Math.floor(d * lambda), Math.floor(cap) / n) - n));
      }),
      { numRuns: 300 },
    );
  });
});

describe('shard layout', () => {
  it('shard i of N has its slot in the i-th N-th of the slot space', () => {
    for (const n of [2, 3, 5, 16, 64]) {
      for (let i = 0; i < n; i++) {
        const slot = calculateSlot(`t:mail${shardSuffix('mail', i, n)}`);
        expect(slot).toBeGreaterThanOrEqual(Math.floor((i * 16384) / n));
        expect(slot).toBeLessThan(Math.floor(((i + 1) * 16384) / n));
      }
    }
    expect(shardSuffix('mail', 0, 1)).toBe('');
  });

  it('lanes spread over the shards and stay put; job ids carry their shard', () => {
    const counts = [0, 0, 0];
    for (let i = 0; i < 3000; i++) counts[shardOfLane(`tenant-${i}`, 3)]!++;
    for (const c of counts) expect(c).toBeGreaterThan(900);
    expect(shardOfLane('tenant-7', 3)).toBe(shardOfLane('tenant-7', 3));
    expect(shardOfLane('anything', 1)).toBe(0);
    expect(shardOfJob(shardJobId('jabc', 2, 3), 3)).toBe(2);
    expect(shardJobId('jabc', 0, 1)).toBe('jabc');
    expect(shardOfJob('jabc', 3)).toBeUndefined();
    expect(shardOfJob('jabc.s5', 3)).toBeUndefined();
  });

  it('the config: shards 1..64 (default 1), a cap of at least one start per shard, no queue quota when sharded', () => {
    expect(parseThrottleConfig('t', { ratePerSecond: 1, capacity: 1 }).shards).toBe(1);
    expect(() => parseThrottleConfig('t', { ratePerSecond: 1, capacity: 1, shards: 65 })).toThrow(/shards/);
    expect(() => parseThrottleConfig('t', { ratePerSecond: 1, capacity: 1, shards: 4, globalRatePerSecond: 3 })).toThrow(/shards/);
    expect(() =>
      parseThrottleConfig('t', { ratePerSecond: 1, capacity: 1, shards: 2, quotas: [{ scope: 'queue', period: 'day', limit: 100 }] }),
    ).toThrow(/shards 1/);
    expect(parseThrottleConfig('t', { ratePerSecond: 1, capacity: 1, shards: 2, quotas: [{ scope: 'key', period: 'day', limit: 100 }] }).shards).toBe(2);
  });
});
