// A queue's throttle settings as the rules file writes them: the throttle's own config schema
// (src/throttle/config.ts) under the file's snake_case names, by one rename table. Every bound and
// its message is the throttle's; what the file writes differently is only how: ms fields are
// durations, names follow the rules file's name rule, and nothing has a default (the file gives only
// what it sets, so the throttle's own defaults apply to the rest).
import { z } from 'zod';
import { backoffSchema, planLimitsSchema, throttleConfigSchema, upstreamLearnSchema, type ThrottleConfigInput } from '../throttle/config.js';
import { quotaSchema, MAX_QUOTAS } from '../throttle/quota.js';
import { durationSchema } from './duration.js';
import { nameSchema } from './limit-schema.js';

/** The one rename table: each throttle setting's name in the rules file, and its name in the throttle's config. */
export const THROTTLE_NAMES = {
  rate_per_second: 'ratePerSecond',
  capacity: 'capacity',
  max_wait: 'maxWaitMs',
  global_rate_per_second: 'globalRatePerSecond',
  burst: 'burst',
  attempts: 'attempts',
  backoff: 'backoff',
  type: 'type',
  delay: 'delayMs',
  max_payload_bytes: 'maxPayloadBytes',
  plans: 'plans',
  default_plan: 'defaultPlan',
  upstream: 'upstream',
  learn: 'learn',
  floor_per_second: 'floorPerSecond',
  scope: 'scope',
  send_headroom: 'sendHeadroomMs',
  quotas: 'quotas',
  period: 'period',
  unit: 'unit',
  limit: 'limit',
  time_zone: 'timeZone',
  when_exhausted: 'whenExhausted',
  shards: 'shards',
  pacing_margin: 'pacingMargin',
} as const satisfies Record<
  string,
  | keyof ThrottleConfigInput
  | keyof z.input<typeof backoffSchema>
  | keyof z.input<typeof planLimitsSchema>
  | keyof z.input<typeof upstreamLearnSchema>
  | keyof z.input<typeof quotaSchema>
>;
type Names = typeof THROTTLE_NAMES;

/** The fields of `T` that the table names, under their throttle names (optional ones stay optional). */
type Renamed<T> = { [K in keyof T as K extends keyof Names ? Names[K] : never]: T[K] };

/**
 * The throttle settings a queue of the rules file sets: the throttle's own config fields (only those
 * the file gives; the throttle's defaults apply to the rest).
 * @useDeclaredType
 */
export type QueueThrottleSettings = Readonly<Pick<ThrottleConfigInput, Extract<Names[keyof Names], keyof ThrottleConfigInput>>>;

const isFileName = (name: string): name is keyof Names => Object.hasOwn(THROTTLE_NAMES, name);

/** The fields of `fields` that the table names, renamed; fields the file left out stay out. */
function renamed<T extends object>(fields: T): Renamed<T> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (value !== undefined && isFileName(name)) out[THROTTLE_NAMES[name]] = value;
  }
  // A loop cannot show TypeScript the mapped type it builds; the table and Renamed are one mapping.
  return out as Renamed<T>;
}

const UNBOUNDED = Number.MAX_SAFE_INTEGER;

/**
 * A throttle's ms field as the file writes it, a duration, between the field's own bounds (the
 * smallest whole ms it accepts, its maximum); a field without a maximum keeps the file's (365 d).
 */
function durationOf(ms: z.ZodNumber) {
  const low = ms.minValue ?? 1;
  const minMs = ms.safeParse(low).success ? low : Math.floor(low) + 1;
  const maxMs = ms.maxValue !== null && ms.maxValue < UNBOUNDED ? ms.maxValue : undefined;
  return durationSchema({ minMs, ...(maxMs !== undefined ? { maxMs } : {}) });
}

const t = throttleConfigSchema.shape;
const plan = planLimitsSchema.shape;
const backoff = backoffSchema.shape;
const upstream = upstreamLearnSchema.shape;

/** A queue's `upstream`: learning the upstream's limit from its answers (on by default). */
const upstreamFileSchema = z
  .object({
    learn: upstream.learn.removeDefault().optional(),
    floor_per_second: upstream.floorPerSecond,
    scope: upstream.scope,
    send_headroom: durationOf(upstream.sendHeadroomMs.removeDefault()).optional(),
  })
  .strict()
  .transform(renamed);

const quota = quotaSchema.shape;

/** One spend quota of a queue: the throttle's, under the file's names. */
const quotaFileSchema = z
  .object({
    scope: quota.scope,
    period: quota.period,
    unit: quota.unit.removeDefault().optional(),
    limit: quota.limit,
    time_zone: quota.timeZone.optional(),
    when_exhausted: quota.whenExhausted.removeDefault().optional(),
  })
  .strict()
  .transform(renamed);

/** A queue's `backoff`: the throttle's, its delay a duration. */
const backoffFileSchema = z.object({ type: backoff.type, delay: durationOf(backoff.delayMs) }).strict().transform(renamed);

/** A plan's lane settings in one queue: what a tenant on this plan gets instead of the queue's own. */
export const queuePlanSchema = z
  .object({
    rate_per_second: plan.ratePerSecond,
    capacity: plan.capacity,
    burst: plan.burst,
    max_wait: durationOf(plan.maxWaitMs.unwrap()).optional(),
  })
  .strict()
  .transform(renamed);

/**
 * The throttle fields of one queue of the `queues:` section, as the file writes them. Parsed, the
 * nested ones (backoff, plans) are already the throttle's; {@link throttleSettingsOf} renames the rest.
 */
export const queueThrottleFields = {
  /** Jobs (cost units) started per second per key: the leak rate. */
  rate_per_second: t.ratePerSecond,
  /** Jobs (cost units) a key's lane holds: the bucket size. */
  capacity: t.capacity,
  /** Refuse at admission when the wait would be longer than this. */
  max_wait: durationOf(t.maxWaitMs.unwrap()).optional(),
  /** Starts per second across all keys (an upstream's own limit). */
  global_rate_per_second: t.globalRatePerSecond,
  burst: t.burst.removeDefault().optional(),
  attempts: t.attempts.removeDefault().optional(),
  backoff: backoffFileSchema.optional(),
  max_payload_bytes: t.maxPayloadBytes.removeDefault().optional(),
  /** Lane settings per plan (a tenant names its plan in the auth section). */
  plans: z.record(nameSchema, queuePlanSchema).optional(),
  /** The plan of tenants without one (or with one this queue does not define); absent: the settings above. */
  default_plan: nameSchema.optional(),
  /** Learning the upstream's limit: `learn` (default true), `floor_per_second`, `scope` (queue or lane). */
  upstream: upstreamFileSchema.optional(),
  /** Spend quotas: calls or cost per day or month, per key or for the queue, in a time zone. */
  quotas: z.array(quotaFileSchema).max(MAX_QUOTAS).optional(),
  /** Hash tags the queue is split over (default 1): its lanes and global cap spread over the cluster's masters. */
  shards: t.shards.removeDefault().optional(),
  /** How much wider than the rate the starts are spaced (a fraction, default 0.01): a 1 s window's room. */
  pacing_margin: t.pacingMargin.removeDefault().optional(),
} satisfies { [K in keyof Names]?: z.ZodType };

/** A parsed queue's throttle fields. */
type QueueThrottleFields = z.output<z.ZodObject<typeof queueThrottleFields>>;

/** A parsed queue's throttle settings under the throttle's names: only the fields the file sets. */
export function throttleSettingsOf(queue: QueueThrottleFields): QueueThrottleSettings {
  return renamed(queue);
}
