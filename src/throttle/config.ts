// A throttle's configuration: the zod schema (single source of truth), its defaults, and the
// integer µs intervals the Lua scripts work with.
import { z } from 'zod';
import { SluiceError } from '../errors.js';
import { describeIssues, issuesOf } from '../validation.js';
import { NAME_PATTERN } from '../redis/keys.js';
import { QuotaArgs, quotasSchema, unreachableCostQuotas } from './quota.js';

const rate = z.number().positive().max(100_000);

export const backoffSchema = z
  .object({
    type: z.enum(['fixed', 'exponential']),
    /** Base delay between attempts in ms (exponential: delayMs x 2^(attempt - 1)). */
    delayMs: z.number().int().nonnegative().max(7 * 24 * 3600 * 1000),
  })
  .strict();

const keepSchema = z
  .object({
    /** Keep finished jobs at most this many seconds. */
    ageSeconds: z.number().int().positive().optional(),
    /** Keep at most this many finished jobs. */
    count: z.number().int().nonnegative().optional(),
  })
  .strict();

/**
 * Learning the upstream's own limit from its answers (docs/algorithms.md, "Learning the upstream's
 * limit"): on by default; the learned rate is never above the configured one.
 */
export const upstreamLearnSchema = z
  .object({
    /** Learn from the upstream's rate-limit headers, 429s and handler reports (default true). */
    learn: z.boolean().default(true),
    /** The slowest rate a run of 429s without headers may bring the pacing down to (default 1/20 of the configured rate). */
    floorPerSecond: rate.optional(),
    /**
     * What the upstream limits: the whole queue (one account: the learned interval spaces all starts)
     * or each lane (one upstream account per key). Default: `queue` with a globalRatePerSecond, else `lane`.
     */
    scope: z.enum(['queue', 'lane']).optional(),
    /**
     * The most an upstream call may leave after its start instant (ms, default 10). Starts are spaced
     * so that calls sent within it never put more than the rate inside any window of 1 s or longer
     * (the pacing margin is raised to this over 1 s when it is smaller); a call about to leave later goes
     * back to its lane instead (`job.assertOnTime()`, which the http handler calls right before sending).
     */
    sendHeadroomMs: z.number().int().min(1).max(1_000).default(10),
  })
  .strict();
export type UpstreamLearnConfig = z.infer<typeof upstreamLearnSchema>;

/** A plan's lane settings: what a lane of a tenant on this plan gets instead of the throttle's own. */
export const planLimitsSchema = z
  .object({
    ratePerSecond: rate,
    capacity: z.number().int().positive().max(10_000_000),
    burst: z.number().int().nonnegative().max(1_000_000).optional(),
    maxWaitMs: z.number().int().positive().optional(),
  })
  .strict();
export type PlanLimits = z.infer<typeof planLimitsSchema>;

export const throttleConfigSchema = z
  .object({
    /** Per-key outflow: jobs (cost units) started per second — the leak rate. */
    ratePerSecond: rate,
    /** Per-key queue bound in cost units — the bucket size. */
    capacity: z.number().int().positive().max(10_000_000),
    /** Optional cap on starts per second across all keys of this throttle (an upstream's limit). */
    globalRatePerSecond: rate.optional(),
    /** Units per key that may start back to back beyond the steady rate (default 0: perfectly spaced). */
    burst: z.number().int().nonnegative().max(1_000_000).default(0),
    /** Refuse at admission when the predicted wait is longer than this (ms). */
    maxWaitMs: z.number().int().positive().optional(),
    /** Handler runs per job, first included (BullMQ attempts). */
    attempts: z.number().int().positive().max(1_000).default(1),
    backoff: backoffSchema.optional(),
    /** Largest serialised payload accepted, in bytes. */
    maxPayloadBytes: z.number().int().positive().max(64 * 1024 * 1024).default(256 * 1024),
    /**
     * How far ahead of their start instant queued jobs are dispatched to the workers (ms, default 50; under
     * a global cap at most max(10 ms, one global interval), so that an idle key's first job waits behind
     * no more than that): the worker holds the job until its exact instant.
     */
    leadMs: z.number().int().nonnegative().max(10_000).default(50),
    /** Accepted for older configurations and ignored: jobs are dispatched at their turn (see leadMs). */
    fetchAheadMs: z.number().int().nonnegative().max(60_000).default(200),
    /**
     * Slots are spaced this fraction wider than the rate (default 1%), so that timing jitter between
     * worker processes never puts rate + 1 starts inside one second. Half of it, at most 5 ms, is how
     * late a start may be and keep its slot; the rest is a window's room for what delays a start after
     * that (docs/algorithms.md, "Pacing margin").
     */
    pacingMargin: z.number().nonnegative().max(0.5).default(0.01),
    /** Deadline for one submit's Redis calls (ms). */
    submitTimeoutMs: z.number().int().positive().max(60_000).default(2_000),
    /** Retention of completed jobs (for `job(id)`); default one day, at most 10,000. */
    keepCompleted: keepSchema.default({ ageSeconds: 24 * 3600, count: 10_000 }),
    /** Retention of failed jobs; default one week, at most 10,000. */
    keepFailed: keepSchema.default({ ageSeconds: 7 * 24 * 3600, count: 10_000 }),
    /** Named plans: a submit that names one gets its lane settings (rate, capacity, burst, max wait). */
    plans: z.record(z.string().regex(NAME_PATTERN), planLimitsSchema).optional(),
    /** The plan of submits that name none (or one this throttle does not define); absent: the settings above. */
    defaultPlan: z.string().optional(),
    /** Learning the upstream's limit (on by default). */
    upstream: upstreamLearnSchema.default({ learn: true, sendHeadroomMs: 10 }),
    /**
     * Spend quotas: calls or cost units per calendar day or month, per key or for the whole queue, in a
     * time zone (docs/algorithms.md, "Spend quotas"); at most 4.
     */
    quotas: quotasSchema.optional(),
    /**
     * Split the throttle over this many hash tags (default 1: one tag, one cluster master). Each lane
     * lives in one shard (by a hash of its lane id); a global cap is divided among the shards by demand
     * (docs/algorithms.md, "A throttle across a cluster"). Changing it remaps lanes: drain the queue first.
     */
    shards: z.number().int().min(1).max(64).default(1),
  })
  .strict()
  .refine((c) => c.upstream.floorPerSecond === undefined || c.upstream.floorPerSecond <= Math.min(c.ratePerSecond, c.globalRatePerSecond ?? Infinity), {
    message: 'upstream floorPerSecond must not exceed the configured rate (ratePerSecond, and globalRatePerSecond when set)',
    path: ['upstream', 'floorPerSecond'],
  })
  .refine((c) => c.shards === 1 || c.globalRatePerSecond === undefined || c.globalRatePerSecond >= c.shards, {
    message: 'globalRatePerSecond must be at least shards (each shard keeps a share of at least 1 start per second)',
    path: ['shards'],
  })
  .refine((c) => c.shards === 1 || !(c.quotas ?? []).some((q) => q.scope === 'queue'), {
    message: 'a queue-scope spend quota is counted in one place: it needs shards 1',
    path: ['shards'],
  })
  .refine((c) => c.defaultPlan === undefined || c.plans?.[c.defaultPlan] !== undefined, {
    message: 'defaultPlan must name one of plans',
    path: ['defaultPlan'],
  })
  .superRefine((c, ctx) => {
    const capacities = [c.capacity, ...Object.values(c.plans ?? {}).map((p) => p.capacity)];
    for (const { index, message } of unreachableCostQuotas(c.quotas ?? [], capacities)) {
      ctx.addIssue({ code: 'custom', path: ['quotas', index, 'limit'], message });
    }
  });

export type ThrottleConfigInput = z.input<typeof throttleConfigSchema>;
export type ThrottleConfig = z.infer<typeof throttleConfigSchema>;

/** Validates a throttle configuration; throws SLUICE_ERR_INVALID_THROTTLE naming every bad field. */
export function parseThrottleConfig(name: string, input: unknown): Readonly<ThrottleConfig> {
  const parsed = throttleConfigSchema.safeParse(input);
  if (!parsed.success) {
    const issues = issuesOf(parsed.error);
    throw new SluiceError('SLUICE_ERR_INVALID_THROTTLE', `throttle '${name}': ${describeIssues(issues)}`, { details: issues });
  }
  return Object.freeze(parsed.data);
}

/** The numbers the scripts take, derived once. */
export interface ThrottleTiming {
  laneIntervalUs: number;
  globalIntervalUs: number;
  /** The dispatch horizon: starts due within this many µs are dispatched now. */
  leadUs: number;
  /** No start is dispatched sooner than this after now: the time BullMQ takes to hand a job to a worker. */
  deliveryUs: number;
  /** A late job's fresh start comes no sooner than this after now (LATE_LEAD_US). */
  lateLeadUs: number;
  marginPpm: number;
  maxWaitUs: number;
  /** A job that reaches its start later than this gets a fresh start (or goes back to its lane). */
  lateToleranceUs: number;
  /** An upstream call about to leave later than this after its start goes back to its lane instead. */
  sendHeadroomUs: number;
  /**
   * An admission without its job (readmit, schedule(), an older sluice's two-step submit) has its job,
   * or its caller has given up, by then (two deadlines, plus a second): a job still missing afterwards is
   * lost, and lane repair frees its unit. A submit writes its job with its unit: never indexed.
   */
  enqueueByUs: number;
  /** The spend quotas' script argument. */
  quotas: QuotaArgs;
}

/**
 * BullMQ's promote-to-worker path takes 1-3 ms on a healthy loopback Redis, up to ~10 ms for a process's
 * first jobs; a job that reaches its start later than that plus the lateness tolerance goes back to its
 * lane behind the lane's next job, so the allowance is generous.
 */
const DELIVERY_US = 10_000;

/**
 * A job that missed its start is at its worker already: its fresh start (lua/throttle-start.lua) needs
 * only the gate's reply to reach that worker, not BullMQ's delivery. It used to come the delivery time
 * after now, and each late job left its handler idle that long: a worker slower than its lane (2
 * handlers of 40 ms on a lane of 100/s, 50/s at most) ran 39/s, with 3 ms 45/s (docs/benchmarks.md, stop 35).
 * Pacing does not depend on it: the fresh start is placed by the lane's meter and hand-outs either way.
 */
const LATE_LEAD_US = 3_000;

/**
 * The most a start may be late and keep its slot (µs). A wider margin leaves more of a window to what
 * delays a start after it passed that check (the OS preempting the process, a collection), instead of
 * letting starts be later.
 */
export const LATE_TOLERANCE_US = 5_000;

export function timingOf(config: ThrottleConfig): ThrottleTiming {
  const globalIntervalUs = config.globalRatePerSecond ? Math.max(1, Math.round(1e6 / config.globalRatePerSecond)) : 0;
  // Under a global cap the slots dispatched ahead stand between an idle key's first job and the
  // upstream: the horizon is kept near one global interval (at least 25 ms, so a dispatcher need not
  // run more than every ~10 ms), and always beyond the delivery time.
  const lead = globalIntervalUs > 0 ? Math.min(config.leadMs * 1000, Math.max(25_000, globalIntervalUs)) : config.leadMs * 1000;
  // Calls that leave up to the send headroom after their start still keep any 1 s window within the
  // rate when rate + 1 starts span at least 1 s + the headroom: a margin of headroom / 1 s.
  const marginPpm = Math.max(Math.round(config.pacingMargin * 1e6), config.upstream.sendHeadroomMs * 1000);
  return {
    laneIntervalUs: Math.max(1, Math.round(1e6 / config.ratePerSecond)),
    globalIntervalUs,
    leadUs: Math.max(lead, DELIVERY_US + 5_000),
    deliveryUs: DELIVERY_US,
    lateLeadUs: LATE_LEAD_US,
    marginPpm,
    maxWaitUs: (config.maxWaitMs ?? 0) * 1000,
    // Half of what the margin absorbs over one second, at most LATE_TOLERANCE_US: the rest covers what
    // can delay a start after its check (bench/outflow-room.ts).
    lateToleranceUs: Math.max(1000, Math.min(LATE_TOLERANCE_US, Math.round(config.pacingMargin * 1e6) / 2)),
    sendHeadroomUs: config.upstream.sendHeadroomMs * 1000,
    enqueueByUs: (2 * config.submitTimeoutMs + 1_000) * 1000,
    quotas: new QuotaArgs(config.quotas ?? []),
  };
}
