// Property test: random sequences of upstream answers (budgets, 429s, successes), lanes appearing and
// vanishing, shares of a sharded throttle's cap written and expiring, with injected times, give the same
// replies and the same hash fields from lua/upstream-learn.lua on real Redis (single node and cluster)
// and from its model, src/upstream/budget.ts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ScriptRegistry } from '../../../src/redis/scripts.js';
import { runLearn } from '../../../src/throttle/upstream-learn.js';
import { learn, type LearnEvent, type LearnState } from '../../../src/upstream/budget.js';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

const event = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('budget' as const), remaining: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 1e9 })), resetUs: fc.integer({ min: 0, max: 120_000_000 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('throttled' as const), startBackUs: fc.integer({ min: 0, max: 3_000_000 }) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('ok' as const) }) },
  // Lane scope only: the lane appears (its own interval) or expires.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('lane' as const), i: fc.option(fc.integer({ min: 1, max: 2_000_000 }), { nil: undefined }) }) },
  // A sharded throttle's allocator writes this shard's share of the cap (µs between starts, held this long).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('share' as const), xi: fc.integer({ min: 1, max: 2_000_000 }), holdsUs: fc.integer({ min: 0, max: 5_000_000 }) }) },
);
const step = fc.record({ dtUs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 100_000 }), fc.integer({ min: 0, max: 5_000_000 })), event });
const args = fc.record({
  configuredUs: fc.oneof(fc.integer({ min: 1, max: 2_000_000 }), fc.constantFrom(1, 100_000, 3_333)),
  floorUs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40_000_000 })),
  holdUs: fc.constantFrom(1_000_000, 5_000_000, 60_000_000),
  lane: fc.boolean(),
  increaseSteps: fc.constantFrom(1, 10, 7),
  shards: fc.constantFrom(1, 2, 3, 7),
  capPerSecond: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 10_000 }), fc.constantFrom(30, 200)),
});

let run = 0;

describe.each(TOPOLOGIES)('upstream-learn.lua == model on random sequences, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  it('budgets, 429s, successes and lanes that come and go agree, reply and fields', async () => {
    const scripts = new ScriptRegistry(ctx.backend.raw);
    await fc.assert(
      fc.asyncProperty(args, fc.array(step, { minLength: 1, maxLength: 50 }), fc.integer({ min: 0, max: 2 ** 30 }), async (a, steps, offset) => {
        const key = `{upl${run++}}:state`;
        let now = 1_700_000_000_000_000 + offset;
        // A global hash always exists (the throttle writes s and v); a lane exists once admitted.
        let state: LearnState = { exists: !a.lane, ui: 0, ue: 0, um: 0 };
        if (!a.lane) await ctx.backend.raw.hset(key, 'v', 0);
        for (const { dtUs, event: e } of steps) {
          now += dtUs;
          if (e.kind === 'share') {
            if (a.lane) continue;
            await ctx.backend.raw.hset(key, 'xi', e.xi, 'xe', now + e.holdsUs);
            state = { ...state, xi: e.xi, xe: now + e.holdsUs };
            continue;
          }
          if (e.kind === 'lane') {
            if (!a.lane) continue;
            if (e.i === undefined) {
              await ctx.backend.raw.del(key);
              state = { exists: false, ui: 0, ue: 0, um: 0 };
            } else {
              await ctx.backend.raw.hset(key, 'i', e.i);
              state = { ...state, exists: true, i: e.i };
            }
            continue;
          }
          const ev: LearnEvent = e.kind === 'throttled' ? { kind: 'throttled', startedUs: now - e.startBackUs } : e;
          const got = await runLearn(scripts, key, ev, a, String(now));
          const want = learn(state, ev, { ...a, nowUs: now });
          expect(got).toEqual(want.result);
          state = want.state;
          const [ui, ue, um] = await ctx.backend.raw.hmget(key, 'ui', 'ue', 'um');
          expect({ ui: Number(ui ?? 0), ue: Number(ue ?? 0), um: Number(um ?? 0) }).toEqual({ ui: state.ui, ue: state.ue, um: state.um });
          // Learning only ever slows: never below the configured (or the lane's own) interval.
          if (got.written) expect(got.ui).toBeGreaterThanOrEqual(a.lane && state.i !== undefined ? state.i : a.configuredUs);
        }
        if (a.lane && !state.exists) expect(await ctx.backend.raw.exists(key)).toBe(0);
      }),
      { numRuns: 150 },
    );
  });
});
