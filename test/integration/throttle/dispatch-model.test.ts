// Property tests of the lane throttle: random sequences of admissions, dispatch rounds, worker starts
// (on time, late, or after the job went back), upstream hand-backs, releases, pauses, cost
// reconciliations, spend quotas (runs with quotas start a little before a UTC midnight, so windows
// reset inside the sequence) and operators' overrides met by callers that have or have not seen them
// yet, with injected times, give the same answers from the Lua scripts on real Redis (single node and
// cluster) and from the TypeScript model (src/throttle/dispatch.model.ts), with and without a global cap.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { timingOf } from '../../../src/throttle/config.js';
import { laneMember } from '../../../src/throttle/keys.js';
import { ScriptRegistry } from '../../../src/redis/scripts.js';
import { LaneScripts } from '../../../src/throttle/lane-scripts.js';
import { DispatchModel } from '../../../src/throttle/dispatch.model.js';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

const LANES = ['a', 'b', 'c', 'd', 'e'];

const op = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('admit' as const), lane: fc.constantFrom(...LANES), cost: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('dispatch' as const), maxJobs: fc.integer({ min: 1, max: 8 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('start' as const), pick: fc.nat() }) },
  // Workers take jobs in the order they were handed out: the first one, on time or late.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('start-first' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('requeue' as const), pick: fc.nat() }) },
  // A started job (told its start, not confirmed) found late by its worker: with or without the lane's
  // later jobs its process holds, which may move with it (`all`: its earlier ones too, which no call names).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('late' as const), pick: fc.nat(), own: fc.constantFrom('none', 'later', 'all') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unpark' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
  // An operator's override of a lane (a new control version); the callers after it see it or not (`view`).
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('override' as const), lane: fc.constantFrom(...LANES), ratePerSecond: fc.constantFrom(4, 40, 400), burst: fc.integer({ min: 0, max: 2 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reconcile' as const), pick: fc.nat(), diff: fc.integer({ min: -4, max: 4 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('learn' as const),
      lane: fc.constantFrom(...LANES),
      queue: fc.boolean(),
      intervalUs: fc.integer({ min: 1_000, max: 200_000 }),
      forUs: fc.integer({ min: -100_000, max: 2_000_000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('pause' as const), lane: fc.constantFrom(...LANES), ms: fc.integer({ min: 1, max: 300 }), global: fc.boolean() }),
  },
);
// `view`: which of the views of the overrides so far the caller has (the newest, or an older one).
const step = fc.record({ dtUs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 30_000 }), fc.integer({ min: 0, max: 400_000 })), op, view: fc.nat() });
const quota = fc.record({
  scope: fc.constantFrom('key' as const, 'queue' as const),
  unit: fc.constantFrom('calls' as const, 'cost' as const),
  // Added to the capacity for a cost quota (it may not be below it).
  limit: fc.integer({ min: 1, max: 8 }),
  whenExhausted: fc.constantFrom('refuse' as const, 'defer' as const),
});
const config = fc.record({
  ratePerSecond: fc.constantFrom(10, 20, 50, 100, 333),
  capacity: fc.integer({ min: 2, max: 12 }),
  burst: fc.integer({ min: 0, max: 2 }),
  globalRatePerSecond: fc.option(fc.constantFrom(20, 50, 120, 500), { nil: undefined }),
  quotas: fc.option(fc.array(quota, { minLength: 1, maxLength: 2 }), { nil: undefined, freq: 2 }),
});
/** A UTC midnight (2023-11-15T00:00:00Z) in µs. */
const MIDNIGHT = 1_700_006_400_000_000;

let run = 0;

/** Throttles with no global cap and no quota: one of `rates`, a capacity in `capacity`, a burst up to `maxBurst`. */
function uncappedConfig(rates: number[], capacity: { min: number; max: number }, maxBurst: number) {
  return fc.record({
    ratePerSecond: fc.constantFrom(...rates),
    capacity: fc.integer(capacity),
    burst: fc.integer({ min: 0, max: maxBurst }),
    globalRatePerSecond: fc.constant(undefined),
    quotas: fc.constant(undefined),
  });
}

describe.each(TOPOLOGIES)('throttle scripts == model on random sequences, %s Redis', (topology) => {
  const ctx = useBackend(topology);
  // For the lane scripts of the views of overrides (one registry: each loads its libraries on every master).
  let scripts: ScriptRegistry | undefined;

  type Config = Omit<typeof config extends fc.Arbitrary<infer C> ? C : never, 'ratePerSecond'> & { ratePerSecond: number };
  type Step = Omit<typeof step extends fc.Arbitrary<infer S> ? S : never, 'view'> & { view?: number };

  /** Runs `steps` against the scripts and the model, expecting the same answers and the same lanes. */
  const agree = async (cfg: Config, steps: Step[], offset: number) => {
        const quotas = cfg.quotas?.map((q) => ({ ...q, period: 'day' as const, limit: q.unit === 'cost' ? cfg.capacity + q.limit : q.limit }));
        const throttle = ctx.sluice.throttle(`prop${run++}`, { ...cfg, quotas, submitTimeoutMs: 10_000 });
        const t = throttle.timing;
        // The views of the overrides a caller may have: version 0 with the throttle's limits, then one per
        // override (version k: that override's limits), each with lane scripts that send its version.
        scripts ??= new ScriptRegistry(ctx.backend.raw);
        const views: { lanes: LaneScripts; intervalUs: number; burst: number }[] = [{ lanes: throttle.gateLanes, intervalUs: t.laneIntervalUs, burst: cfg.burst }];
        // The caller of a step: the newest view, or (one step in three) an older one.
        let lanes = throttle.gateLanes;
        let view = 0;
        const model = new DispatchModel({ globalIntervalUs: t.globalIntervalUs, marginPpm: t.marginPpm, ...(quotas ? { quotas: throttle.config.quotas! } : {}) });
        let now = quotas ? MIDNIGHT - (offset % 6_000_000) : 1_700_000_000_000_000 + offset;
        let job = 0;
        const queued: { lane: string; jobId: string; cost: number }[] = [];
        const dispatched: { lane: string; jobId: string; cost: number }[] = [];
        // Started or parked: with the start each had (the worker sends it back with it).
        const started: { lane: string; jobId: string; cost: number; slotUs?: number | undefined }[] = [];
        const parked: { lane: string; jobId: string; cost: number; slotUs?: number | undefined }[] = [];
        // The same worker call to the script and to the model.
        const startBoth = async (j: { lane: string; jobId: string; cost: number }, how: { mode: 'start' } | { mode: 'requeue'; slotUs?: number | undefined; callMade?: boolean }, at: number) => ({
          got: await lanes.start(j.lane, j.jobId, j.cost, how, String(at)),
          want: model.start(at, j.lane, laneMember(j.jobId, j.cost), how, views[view]!.intervalUs, views[view]!.burst, t.leadUs, t.lateLeadUs, t.lateToleranceUs, view),
        });
        for (const { dtUs, op: o, view: pick } of steps) {
          now += dtUs;
          view = pick !== undefined && pick % 3 === 0 ? pick % views.length : views.length - 1;
          lanes = views[view]!.lanes;
          const at = String(now);
          switch (o.kind) {
            case 'admit': {
              const jobId = `p${job++}`;
              const got = await lanes.admit(o.lane, jobId, o.cost, false, at);
              const want = model.admit(now, o.lane, jobId, o.cost, cfg.capacity, views[view]!.intervalUs, views[view]!.burst, 0, view);
              const { nowUs: _n, ...rest } = got as typeof got & { nowUs: number };
              expect(rest).toEqual(want);
              if (want.kind === 'admitted') queued.push({ lane: o.lane, jobId, cost: o.cost });
              break;
            }
            case 'dispatch': {
              const got = await lanes.dispatch(o.maxJobs, at);
              const want = model.dispatch(now, t.leadUs, t.deliveryUs, o.maxJobs);
              expect({ nextUs: got.nextUs, jobs: got.jobs }).toEqual(want);
              for (const j of want.jobs) {
                const i = queued.findIndex((q) => q.jobId === j.jobId);
                dispatched.push(queued.splice(i, 1)[0]!);
              }
              break;
            }
            case 'start':
            case 'start-first': {
              if (dispatched.length === 0) break;
              const j = dispatched.splice(o.kind === 'start' ? o.pick % dispatched.length : 0, 1)[0]!;
              const { got, want } = await startBoth(j, { mode: 'start' }, now);
              expect(got.go ? { go: true, startUs: got.startUs } : { go: false, ...(got.slotUs ? { slotUs: got.slotUs } : {}), ...(got.askAtUs ? { askAtUs: got.askAtUs } : {}) }).toEqual(want);
              // A job with no start now is parked by its worker, then put back in its lane; one whose start a
              // late job moved more than a horizon ahead asks again later.
              if (want.go) started.push({ ...j, slotUs: want.startUs });
              else if (want.askAtUs !== undefined) dispatched.push(j);
              else parked.push({ ...j, slotUs: want.slotUs });
              break;
            }
            case 'late': {
              if (started.length === 0) break;
              const i = o.pick % started.length;
              const j = started[i]!;
              const heldUs = j.slotUs;
              if (heldUs === undefined) break;
              const mine = o.own === 'none' ? [] : started.filter((h) => h !== j && h.lane === j.lane && h.slotUs !== undefined && (o.own === 'all' || h.slotUs >= heldUs));
              const how = { mode: 'late' as const, heldUs, held: mine.map((h) => laneMember(h.jobId, h.cost)) };
              const got = await lanes.start(j.lane, j.jobId, j.cost, how, at);
              const want = model.start(now, j.lane, laneMember(j.jobId, j.cost), how, views[view]!.intervalUs, views[view]!.burst, t.leadUs, t.lateLeadUs, t.lateToleranceUs, view);
              const { nowUs: _n, ...rest } = got;
              expect(rest).toEqual(want);
              if (want.go) {
                j.slotUs = want.startUs;
                // (Those it named from before its start are not moved: 'all'.)
                if (want.shiftUs !== undefined) for (const h of mine) if (h.slotUs! >= heldUs) h.slotUs! += want.shiftUs;
              } else {
                started.splice(i, 1);
                parked.push({ ...j, slotUs: want.slotUs });
              }
              break;
            }
            // A started job sent back by its upstream, or a parked one put back: both go back ahead of the
            // fresh jobs of their lane, in the order they were first handed out.
            case 'requeue':
            case 'unpark': {
              const from = o.kind === 'requeue' ? started : parked;
              if (from.length === 0) break;
              const j = from.splice(o.pick % from.length, 1)[0]!;
              // A started job's call was made (its quota units stay counted); a parked one's was not.
              const { got, want } = await startBoth(j, { mode: 'requeue', slotUs: j.slotUs, callMade: o.kind === 'requeue' }, now);
              expect(got.go).toBe(false);
              expect(want.go).toBe(false);
              queued.push(j);
              break;
            }
            // A started job's actual cost differs from its admitted one: charged or refunded.
            case 'reconcile': {
              if (started.length === 0) break;
              const j = started[o.pick % started.length]!;
              expect(await lanes.reconcile(j.lane, o.diff, at, j.slotUs)).toEqual(model.reconcile(now, j.lane, o.diff, views[view]!.intervalUs, t.leadUs, j.slotUs));
              break;
            }
            case 'release': {
              if (queued.length === 0) break;
              const j = queued.splice(o.pick % queued.length, 1)[0]!;
              expect(await lanes.release(j.lane, [laneMember(j.jobId, j.cost)], at)).toBe(model.release(j.lane, [laneMember(j.jobId, j.cost)]));
              break;
            }
            case 'override': {
              // Made at the next control version by a process that has seen it.
              const version = views.length;
              const timing = timingOf({ ...throttle.config, ratePerSecond: o.ratePerSecond });
              const made = { lanes: new LaneScripts(scripts, throttle.keys, timing, cfg.capacity, o.burst, () => version), intervalUs: timing.laneIntervalUs, burst: o.burst };
              views.push(made);
              // (Whether the lane had state, which the reply says, is not the model's: it keeps every lane it saw.)
              await made.lanes.setLimits(o.lane, version);
              model.limits(o.lane, made.intervalUs, made.burst, version);
              break;
            }
            case 'learn': {
              // What lua/upstream-learn.lua writes: the queue's fields, or an existing lane's.
              const key = o.queue ? throttle.keys.global : throttle.keys.lane(o.lane);
              if (o.queue || (await ctx.backend.raw.exists(key)) === 1) await ctx.backend.raw.hset(key, 'ui', o.intervalUs, 'ue', now + o.forUs);
              model.learn(o.queue ? 'queue' : 'lane', o.lane, o.intervalUs, now + o.forUs);
              break;
            }
            case 'pause': {
              const scope = o.global ? 'global' : 'lane';
              expect(await lanes.pause(o.lane, o.ms, scope, at)).toBe(model.pause(now, o.lane, o.ms * 1000, scope));
              break;
            }
          }
        }
        for (const lane of LANES) {
          expect((await lanes.state(lane, String(now))).depth).toBe(model.depth(lane));
          expect(await ctx.backend.raw.zrange(throttle.keys.laneQueue(lane), '0', '-1')).toEqual(model.queued(lane));
          // The lane is paced by the same interval and burst, from the same override.
          const [i, b, ov] = await ctx.backend.raw.hmget(throttle.keys.lane(lane), 'i', 'b', 'ov');
          if (i !== null) expect({ i: Number(i), b: Number(b), ov: Number(ov ?? 0) }).toEqual(model.pacing(lane));
          if (quotas) expect((await throttle.quotaUse(lane, now / 1000)).map((u) => u.used)).toEqual(model.quotaUsed(lane, now));
        }
  };

  it('admission, dispatch, starts, hand-backs, releases and pauses agree', async () => {
    await fc.assert(fc.asyncProperty(config, fc.array(step, { minLength: 1, maxLength: 60 }), fc.integer({ min: 0, max: 2 ** 30 }), agree), { numRuns: Number(process.env.PROP_RUNS ?? 60) });
  });

  // One lane far faster than the rounds, alone or nearly (lua/throttle-dispatch.lua hands such a lane
  // out as a run: kept out of the dispatch sets and written once as the run ends); rounds of up to 64.
  it('a fast lane handed out as a run agrees too', async () => {
    const fastConfig = uncappedConfig([2_000, 5_000, 20_000], { min: 20, max: 80 }, 3);
    const fastOp = fc.oneof(
      { weight: 6, arbitrary: fc.record({ kind: fc.constant('admit' as const), lane: fc.constantFrom('a', 'a', 'a', 'b'), cost: fc.integer({ min: 1, max: 2 }) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('dispatch' as const), maxJobs: fc.integer({ min: 1, max: 64 }) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('start' as const), pick: fc.nat() }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('start-first' as const) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('late' as const), pick: fc.nat(), own: fc.constantFrom('none', 'later', 'all') }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('unpark' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('pause' as const), lane: fc.constantFrom('a', 'b'), ms: fc.integer({ min: 1, max: 30 }), global: fc.boolean() }) },
    );
    const fastStep = fc.record({ dtUs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 60_000 })), op: fastOp });
    await fc.assert(fc.asyncProperty(fastConfig, fc.array(fastStep, { minLength: 1, maxLength: 120 }), fc.integer({ min: 0, max: 2 ** 30 }), agree), { numRuns: Number(process.env.PROP_RUNS ?? 40) });
  });

  // A process slower than its lane: it holds several of the lane's jobs (told their starts, none started)
  // and finds the first late. Its late call names the ones it holds, which move with it when nothing else
  // stands in the way (lua/throttle-start.lua movable_later), so the lane keeps its order.
  it("a slow process's late job moves the jobs it holds, in agreement too", async () => {
    const slowConfig = uncappedConfig([200, 2_000, 20_000], { min: 10, max: 40 }, 2);
    const slowOp = fc.oneof(
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('admit' as const), lane: fc.constantFrom('a', 'a', 'a', 'b'), cost: fc.integer({ min: 1, max: 2 }) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('dispatch' as const), maxJobs: fc.integer({ min: 1, max: 32 }) }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('start-first' as const) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('start' as const), pick: fc.nat() }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('late' as const), pick: fc.constantFrom(0, 0, 0, 1, 2), own: fc.constantFrom('later', 'later', 'later', 'none', 'all') }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('unpark' as const), pick: fc.nat() }) },
    );
    const slowStep = fc.record({ dtUs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 40_000 })), op: slowOp });
    await fc.assert(fc.asyncProperty(slowConfig, fc.array(slowStep, { minLength: 30, maxLength: 80 }), fc.integer({ min: 0, max: 2 ** 30 }), agree), { numRuns: Number(process.env.PROP_RUNS ?? 40) });
  });

  // Under a global cap, a job late to its first call while no worker has its lane's later hand-outs takes
  // the next one's slot, each of them the one after, the last a fresh start (lua/throttle-start.lua):
  // lanes slow enough that a late job can still reach the next slot, several jobs of a lane in a horizon.
  it('under a cap, a late job passes its slot on along its lane, in agreement too', async () => {
    const cappedConfig = fc.record({
      ratePerSecond: fc.constantFrom(50, 100),
      capacity: fc.integer({ min: 6, max: 20 }),
      burst: fc.constant(0),
      globalRatePerSecond: fc.constantFrom(120, 500),
      quotas: fc.constant(undefined),
    });
    const cappedOp = fc.oneof(
      { weight: 5, arbitrary: fc.record({ kind: fc.constant('admit' as const), lane: fc.constantFrom('a', 'a', 'b'), cost: fc.constantFrom(1, 1, 1, 2) }) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('dispatch' as const), maxJobs: fc.integer({ min: 1, max: 8 }) }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('start-first' as const) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('start' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('late' as const), pick: fc.nat(), own: fc.constant('none') }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('unpark' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('pause' as const), lane: fc.constantFrom('a', 'b'), ms: fc.integer({ min: 1, max: 30 }), global: fc.boolean() }) },
    );
    const cappedStep = fc.record({ dtUs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 12_000 }), fc.integer({ min: 0, max: 40_000 })), op: cappedOp });
    await fc.assert(fc.asyncProperty(cappedConfig, fc.array(cappedStep, { minLength: 30, maxLength: 80 }), fc.integer({ min: 0, max: 2 ** 30 }), agree), { numRuns: Number(process.env.PROP_RUNS ?? 40) });
  });
});
