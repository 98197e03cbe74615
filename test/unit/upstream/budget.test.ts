// The budget controller's model on exact vectors: the budget rule, AIMD's decrease, its one decrease
// per overshoot, its increase up to 95% of the rate that drew the 429, the floor, and expiry.
import { describe, expect, it } from 'vitest';
import { effectiveInterval, learn, shardPart, type LearnArgs, type LearnState } from '../../../src/upstream/budget.js';

const T0 = 1_700_000_000_000_000;
const EMPTY: LearnState = { exists: true, ui: 0, ue: 0, um: 0 };
// Configured 10/s (100 ms), default floor (2 s), hold 60 s, 10 steps.
const A: LearnArgs = { nowUs: T0, configuredUs: 100_000, floorUs: 0, holdUs: 60_000_000, lane: false, increaseSteps: 10 };

describe('the budget rule', () => {
  it('spreads what is left until the reset, never faster than configured', () => {
    expect(learn(EMPTY, { kind: 'budget', remaining: 9, resetUs: 2_000_000 }, A).result).toEqual({ written: true, ui: 222_222, ue: T0 + 2_000_000, um: 0 });
    expect(learn(EMPTY, { kind: 'budget', remaining: 0, resetUs: 700_000 }, A).result).toEqual({ written: true, ui: 700_000, ue: T0 + 700_000, um: 0 });
    expect(learn(EMPTY, { kind: 'budget', remaining: 4999, resetUs: 1_000_000 }, A).result).toEqual({ written: true, ui: 100_000, ue: T0 + 1_000_000, um: 0 });
    // No floor: a used-up budget of an hour holds for the hour.
    expect(learn(EMPTY, { kind: 'budget', remaining: 0, resetUs: 3_600_000_000 }, A).result.ui).toBe(3_600_000_000);
  });

  it("a lane's own interval (its plan) is the configured one; a missing lane is never written", () => {
    const lane = { ...A, lane: true };
    expect(learn({ ...EMPTY, i: 250_000 }, { kind: 'budget', remaining: 9, resetUs: 2_000_000 }, lane).result.ui).toBe(250_000);
    expect(learn({ exists: false, ui: 0, ue: 0, um: 0 }, { kind: 'ok' }, lane).result).toEqual({ written: false, ui: 0, ue: 0, um: 0 });
  });

  it("a shard of a sharded throttle takes its share of the cap's part of the queue's budget, else an equal part", () => {
    // Cap 30/s over 3 shards; this shard's share 28/s (the allocator writes xi = round(1e6 / 28)), held.
    const sharded = { nowUs: T0, shards: 3, capPerSecond: 30 };
    const busy = { xi: Math.round(1e6 / 28), xe: T0 + 1 };
    expect(shardPart(300, busy, sharded)).toBe(280);
    expect(shardPart(300, { xi: 1_000_000, xe: T0 + 1 }, sharded)).toBe(10);
    // The share expired (no allocator): the equal split.
    expect(shardPart(300, { ...busy, xe: T0 }, sharded)).toBe(100);
    // No cap: the equal split; at least 1 while anything is left; nothing left stays nothing.
    expect(shardPart(300, busy, { ...sharded, capPerSecond: 0 })).toBe(100);
    expect(shardPart(2, busy, { ...sharded, capPerSecond: 0 })).toBe(1);
    expect(shardPart(0, busy, sharded)).toBe(0);
    // Not sharded: the whole budget.
    expect(shardPart(300, busy, { nowUs: T0 })).toBe(300);
    // In the rule: 280 of the 300 left over 2 s, not 100.
    expect(learn({ ...EMPTY, ...busy }, { kind: 'budget', remaining: 300, resetUs: 2_000_000 }, { ...A, configuredUs: 1, ...sharded }).result.ui).toBe(7_142);
    // A lane's budget is its own, never divided.
    expect(learn({ ...EMPTY, ...busy }, { kind: 'budget', remaining: 300, resetUs: 2_000_000 }, { ...A, configuredUs: 1, lane: true, ...sharded }).result.ui).toBe(6_666);
  });
});

describe('AIMD for 429s without headers', () => {
  it('halves the rate, once per overshoot, then adds 1/10 of the configured rate per success up to 95% of the 429 rate', () => {
    let s = learn(EMPTY, { kind: 'throttled', startedUs: T0 - 10_000 }, A);
    expect(s.result).toEqual({ written: true, ui: 200_000, ue: T0 + 60_000_000, um: 100_000 });
    // Another 429 of a call that started before the decrease: the same overshoot.
    expect(learn(s.state, { kind: 'throttled', startedUs: T0 - 5_000 }, { ...A, nowUs: T0 + 50_000 }).result.written).toBe(false);
    // Successes: 5/s -> 6/s -> 7/s -> 8/s -> 9/s (each interval floored) -> capped at 9.5/s (105,263 µs).
    const seen: number[] = [];
    for (let k = 1; k <= 6; k++) {
      s = learn(s.state, { kind: 'ok' }, { ...A, nowUs: T0 + k * 200_000 });
      seen.push(s.state.ui);
    }
    expect(seen).toEqual([166_666, 142_856, 124_999, 111_110, 105_263, 105_263]);
    expect(s.result.written).toBe(false);
    // A 429 of a call started after the decrease: a new overshoot, halved again from 9.5/s.
    s = learn(s.state, { kind: 'throttled', startedUs: T0 + 1_000_000 }, { ...A, nowUs: T0 + 1_300_000 });
    expect(s.result).toEqual({ written: true, ui: 210_526, ue: T0 + 61_300_000, um: 105_263 });
  });

  it('never below the floor; after the hold the configured rate is back', () => {
    let s = { state: EMPTY };
    for (let k = 0; k < 8; k++) s = learn(s.state, { kind: 'throttled', startedUs: T0 + k * 100 }, { ...A, floorUs: 1_000_000, nowUs: T0 + k * 100 + 1 });
    expect(s.state.ui).toBe(1_000_000);
    expect(effectiveInterval(s.state, 100_000, T0 + 1_000)).toBe(1_000_000);
    expect(effectiveInterval(s.state, 100_000, T0 + 61_000_000)).toBe(100_000);
    expect(learn(s.state, { kind: 'ok' }, { ...A, nowUs: T0 + 61_000_000 }).result.written).toBe(false);
  });
});
