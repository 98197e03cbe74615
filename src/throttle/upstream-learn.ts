// Learning the upstream's limit: one upstream answer (its parsed headers, or a module handler's
// report) becomes a call of lua/upstream-learn.lua on the throttle's global hash (queue scope) or the
// job's lane hash (lane scope). The dispatcher reads the learned interval (ui, ue) from there.
import { integerArray } from '../redis/reply.js';
import type { ScriptRegistry } from '../redis/scripts.js';
import { AIMD_HOLD_MS, AIMD_INCREASE_STEPS, MAX_RESET_MS, MAX_RETRY_AFTER_MS, type IgnoredHeader, type LearnArgs, type LearnEvent, type LearnResult } from '../upstream/index.js';
import type { ThrottleConfig, ThrottleTiming } from './config.js';
import type { ThrottleKeys } from './keys.js';

/** What a handler reports about one upstream answer (module handlers: `job.upstream(report)`). */
export interface UpstreamReport {
  /** The upstream's budget for the current window. */
  limit?: number;
  /** What is left of it after this call. */
  remaining?: number;
  /** Milliseconds until the budget is whole again. */
  resetMs?: number;
  /** The upstream asked to wait this long (a 429 or 503 with Retry-After). */
  retryAfterMs?: number;
  /**
   * What the call actually cost, in the job's cost units: the difference to the cost the job was
   * admitted with is charged to (or refunded from) its lane's and the queue's meters; the sum of what one
   * job reports is its actual cost. Applied whether or not learning is on.
   */
  cost?: number;
  /** The upstream refused the call for its rate (a 429), with or without headers. */
  throttled?: boolean;
  /** Header values the parser did not use (counted by the metrics, never learned from). */
  ignored?: readonly IgnoredHeader[];
}

export type UpstreamScope = 'queue' | 'lane';

/** What one report did. */
export interface LearnOutcome {
  /** The event the report was read as ('ignored': learning is off, or nothing usable in it). */
  event: LearnEvent['kind'] | 'ignored';
  scope: UpstreamScope;
  result?: LearnResult;
  /** A scope pause set because the budget is used up (ms), or the report's Retry-After. */
  pausedMs?: number;
  /** Why the report could not be recorded (Redis unreachable): the job goes on regardless. */
  error?: string;
}

const finite = (v: number | undefined, max: number): number | undefined => (v !== undefined && Number.isFinite(v) && v >= 0 && v <= max ? v : undefined);

/** A report as the controller's event: a budget when remaining and reset are both known, a 429, or a plain success. */
export function eventOf(report: UpstreamReport, startedUs: number): LearnEvent {
  const remaining = finite(report.remaining, 1e12);
  const resetMs = finite(report.resetMs, MAX_RESET_MS);
  const limit = finite(report.limit, 1e12);
  if (remaining !== undefined && resetMs !== undefined && (limit === undefined || remaining <= limit)) {
    return { kind: 'budget', remaining: Math.floor(remaining), resetUs: Math.round(resetMs * 1000) };
  }
  if (report.throttled || report.retryAfterMs !== undefined) return { kind: 'throttled', startedUs };
  return { kind: 'ok' };
}

/** One call of lua/upstream-learn.lua on the hash `stateKey` (the script's reply, checked). */
export async function runLearn(scripts: ScriptRegistry, stateKey: string, event: LearnEvent, a: Omit<LearnArgs, 'nowUs'>, now = ''): Promise<LearnResult> {
  const reply = integerArray(
    'upstream-learn',
    await scripts.run(
      'upstream-learn',
      { state: stateKey },
      {
        now,
        kind: event.kind,
        configuredUs: a.configuredUs,
        floorUs: a.floorUs,
        holdUs: a.holdUs,
        lane: a.lane ? '1' : '0',
        remaining: event.kind === 'budget' ? event.remaining : 0,
        resetUs: event.kind === 'budget' ? event.resetUs : 0,
        startedUs: event.kind === 'throttled' ? event.startedUs : 0,
        increaseSteps: a.increaseSteps,
        shards: a.shards ?? 1,
        capPerSecond: a.capPerSecond ?? 0,
      },
    ),
    4,
  );
  return { written: reply[0] === 1, ui: reply[1]!, ue: reply[2]!, um: reply[3]! };
}

export class UpstreamLearner {
  readonly scope: UpstreamScope;
  private readonly floorUs: number;

  constructor(
    private readonly scripts: ScriptRegistry,
    private readonly keys: ThrottleKeys,
    private readonly timing: ThrottleTiming,
    private readonly config: ThrottleConfig,
    private readonly pause: (laneId: string, ms: number, scope: 'lane' | 'global') => Promise<unknown>,
    /** The shards of the throttle: a queue's budget is shared, so each shard learns from its part of it. */
    private readonly shards = 1,
  ) {
    this.scope = config.upstream.scope ?? (config.globalRatePerSecond !== undefined ? 'queue' : 'lane');
    this.floorUs = config.upstream.floorPerSecond ? Math.round(1e6 / config.upstream.floorPerSecond) : 0;
  }

  get enabled(): boolean {
    return this.config.upstream.learn;
  }

  /**
   * The configured interval learning may never go below: a lane's own (the script reads the lane's
   * `i`, its plan or override), or the queue's global interval; without a global cap, the queue scope
   * takes the per-key interval as the queue's ceiling.
   */
  private configuredUs(scope: UpstreamScope): number {
    return scope === 'lane' || this.timing.globalIntervalUs === 0 ? this.timing.laneIntervalUs : this.timing.globalIntervalUs;
  }

  /** Applies one report for a call of `laneId` that started at `startedUs` (Redis µs). */
  async report(laneId: string, report: UpstreamReport, startedUs: number, scope: UpstreamScope = this.scope, now = ''): Promise<LearnOutcome> {
    if (!this.enabled) return { event: 'ignored', scope };
    const event = eventOf(report, startedUs);
    const lane = scope === 'lane';
    // A sharded throttle's shards each pace by what they learn: a queue's budget is divided among them
    // as the cap is (the script takes this shard's part: its share of the cap, else an equal part), so
    // together they never spend more than it, and a busy shard is not held to an idle one's part.
    const args = {
      configuredUs: this.configuredUs(scope),
      floorUs: this.floorUs,
      holdUs: AIMD_HOLD_MS * 1000,
      lane,
      increaseSteps: AIMD_INCREASE_STEPS,
      shards: this.shards,
      capPerSecond: this.config.globalRatePerSecond ?? 0,
    };
    const result = await runLearn(this.scripts, lane ? this.keys.lane(laneId) : this.keys.global, event, args, now);
    // Nothing may start before the budget is back (a used-up budget), nor before a Retry-After: the
    // learned interval spaces starts from the last one, a pause holds them until an instant.
    const hold = Math.max(event.kind === 'budget' && event.remaining === 0 ? event.resetUs / 1000 : 0, finite(report.retryAfterMs, MAX_RETRY_AFTER_MS) ?? 0);
    if (hold > 0) {
      await this.pause(laneId, hold, scope === 'queue' ? 'global' : 'lane');
      return { event: event.kind, scope, result, pausedMs: hold };
    }
    return { event: event.kind, scope, result };
  }
}
