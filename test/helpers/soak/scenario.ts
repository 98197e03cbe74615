// The soak's scenarios and settings: the throttle each scenario runs (global cap, burst, key quota) and
// the workload's fixed shape (key skew, costs, the jobs that fail, defer or are submitted again).
import type { ThrottleConfigInput } from '../../../src/index.js';

export const SCENARIOS = ['cap', 'nocap', 'burst', 'quota'] as const;
export type Scenario = (typeof SCENARIOS)[number];

/** What one run is asked for (the entry's flags, in ms and per second). */
export interface SoakSettings {
  scenario: Scenario;
  seed: number;
  /** Distinct keys (lanes) the submits are drawn from, Zipf-skewed. */
  keys: number;
  /** Offered submits per second over all keys (well above what the lanes drain). */
  submitsPerSecond: number;
  durationMs: number;
  laneRatePerSecond: number;
  capacity: number;
  /** Worker processes (test/helpers/throttle-proc.ts). */
  procs: number;
  /** Handler concurrency per worker process. */
  concurrency: number;
  /** A random lane is paused every this many ms while the submits run (0: none). */
  pauseEveryMs: number;
  /** Short pauses of the whole throttle, spread over the run. */
  globalPauses: number;
  /** A worker process is SIGKILLed this long after the submits begin (0: none). */
  killAtMs: number;
  /** How long the queue may take to drain once the submits stop. */
  drainTimeoutMs: number;
  /** 1: one redis-server; more: a cluster of that many masters (target.ts). */
  masters: number;
  /** The throttle's shards (`shards`; 1: unsharded). */
  shards: number;
}

/** The workload's fixed shape: the same in every scenario. */
export const WORKLOAD = {
  /** Key i (from 0) is drawn with weight 1 / (i + 1)^zipfExponent: a few hot lanes, a long cold tail. */
  zipfExponent: 1.1,
  /** Job costs are drawn uniformly from 1..maxCost. */
  maxCost: 3,
  handlerMs: 20,
  attempts: 2,
  backoffMs: 300,
  /** Fractions of the submits whose handler throws on every attempt, throws once, or defers once (DeferJob). */
  failAlwaysFraction: 0.01,
  failOnceFraction: 0.05,
  deferFraction: 0.03,
  deferMs: 200,
  /** Fraction of the refusals submitted once more at their retryAfterMs, if that is at most retryAfterMaxMs. */
  retryAfterFraction: 0.1,
  retryAfterMaxMs: 5_000,
} as const;

/** What sets the scenarios apart. */
interface ScenarioShape {
  globalRatePerSecond?: number;
  burst: number;
  /** A refusing key quota of this many calls a day (calendar day, UTC). */
  quotaCallsPerDay?: number;
}

const SHAPES: Record<Scenario, ScenarioShape> = {
  // Under a cap the lanes share the global meter: the cap, not the lanes, is the limit at the hot end.
  cap: { globalRatePerSecond: 150, burst: 0 },
  nocap: { burst: 0 },
  burst: { burst: 3 },
  // Small enough that the hot lanes use their day up in seconds, retries and deferrals included.
  quota: { burst: 0, quotaCallsPerDay: 25 },
};

export function shapeOf(scenario: Scenario): Readonly<ScenarioShape> {
  return SHAPES[scenario];
}

/** The throttle the scenario runs. Finished jobs are kept for the run's length, so every job's outcome can be read. */
export function throttleConfigOf(settings: SoakSettings): ThrottleConfigInput {
  const shape = SHAPES[settings.scenario];
  return {
    ratePerSecond: settings.laneRatePerSecond,
    capacity: settings.capacity,
    burst: shape.burst,
    attempts: WORKLOAD.attempts,
    backoff: { type: 'fixed', delayMs: WORKLOAD.backoffMs },
    keepCompleted: { ageSeconds: 3600, count: 1_000_000 },
    keepFailed: { ageSeconds: 3600, count: 1_000_000 },
    ...(shape.globalRatePerSecond ? { globalRatePerSecond: shape.globalRatePerSecond } : {}),
    ...(settings.shards > 1 ? { shards: settings.shards } : {}),
    ...(shape.quotaCallsPerDay ? { quotas: [{ scope: 'key', period: 'day', unit: 'calls', limit: shape.quotaCallsPerDay, whenExhausted: 'refuse' }] } : {}),
  };
}
