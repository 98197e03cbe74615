// The rules file's limit fields (snake_case): `rate_limit` with `algorithm`, explicit `policy`
// parameters, and the per-rule `fail_mode`, `timeout` and `shadow_mode`. Shared by descriptor
// nodes and plans.
import { z } from 'zod';
import { ALGORITHM_ALIASES } from '../limiters/policy.js';
import { NAME_PATTERN, NAME_RULE } from '../limiters/policy-base.js';
import { durationSchema } from './duration.js';

/** A rule, plan, domain or queue name (the one name pattern, src/redis/keys.ts). */
export const nameSchema = z.string().regex(NAME_PATTERN, NAME_RULE);

/** The units of a `rate_limit`. */
export const TIME_UNITS = ['second', 'minute', 'hour', 'day'] as const;
/** One of {@link TIME_UNITS}. */
export type TimeUnit = (typeof TIME_UNITS)[number];
/** Milliseconds of each time unit. */
export const UNIT_MS: Readonly<Record<TimeUnit, number>> = { second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 };

/** Algorithms a `rate_limit` can run on (a concurrency limit has no time unit: use `policy`). */
export const RATE_ALGORITHMS = ['fixed-window', 'sliding-log', 'sliding-counter', 'token-bucket', 'leaky-bucket'] as const;
/** Algorithms a `policy:` block can name. */
export const ALL_ALGORITHMS = [...RATE_ALGORITHMS, 'concurrency'] as const;

/** One of `names`, or another name of one of them (`gcra` for `leaky-bucket`), read as the name itself. */
function algorithmSchema<const A extends readonly [string, ...string[]]>(names: A) {
  const aliases = Object.keys(ALGORITHM_ALIASES).filter((alias) => names.includes(ALGORITHM_ALIASES[alias as keyof typeof ALGORITHM_ALIASES]));
  return z.enum([...names, ...aliases] as [string, ...string[]]).transform((a) => ((ALGORITHM_ALIASES as Record<string, string>)[a] ?? a) as A[number]);
}

/** `requests_per_unit` calls per `unit`, Envoy style; `burst` only for the leaky bucket (GCRA). */
export const rateLimitSchema = z
  .object({
    unit: z.enum(TIME_UNITS),
    requests_per_unit: z.number().int().positive().max(1e12),
    burst: z.number().int().nonnegative().max(1e12).optional(),
  })
  .strict();
/** A parsed `rate_limit`. */
export type RateLimitSpec = z.infer<typeof rateLimitSchema>;

/**
 * Explicit algorithm parameters: the camelCase policy fields in snake_case, with durations for the
 * `*Ms` fields (`window: 1m` is windowMs 60000, `lease: 30s` is leaseMs 30000). Which fields an
 * algorithm takes is checked by the policy schema itself.
 */
export const policyBlockSchema = z
  .object({
    algorithm: algorithmSchema(ALL_ALGORITHMS),
    limit: z.number().int().positive().max(1e12).optional(),
    window: durationSchema().optional(),
    capacity: z.number().int().positive().max(1e12).optional(),
    refill_per_second: z.number().positive().max(1e6).optional(),
    rate_per_second: z.number().positive().max(1e6).optional(),
    burst: z.number().int().nonnegative().max(1e12).optional(),
    record_rejected: z.boolean().optional(),
    rounding: z.enum(['floor', 'ceil']).optional(),
    lease: durationSchema().optional(),
  })
  .strict();
/** A parsed `policy:` block (durations already in ms). */
export type PolicyBlock = z.infer<typeof policyBlockSchema>;

/** The fields that say how a rule limits; a descriptor node and a plan both carry them. */
export const limitShape = {
  rate_limit: rateLimitSchema.optional(),
  /** Algorithm of a `rate_limit` (default sliding-counter). */
  algorithm: algorithmSchema(RATE_ALGORITHMS).optional(),
  policy: policyBlockSchema.optional(),
  fail_mode: z.enum(['open', 'closed']).optional(),
  timeout: durationSchema({ maxMs: 60_000 }).optional(),
  /** Decide and count, never refuse: for trying a rule out on live traffic. */
  shadow_mode: z.boolean().optional(),
};

/** A named tier (`free`, `paid`, ...) a rule can take its limit from. */
export const planSchema = z.object(limitShape).strict();
/** A parsed plan. */
export type PlanSpec = z.infer<typeof planSchema>;

/** The limit fields of a node or plan, parsed on their own (what the policy builder needs). */
export const limitPartSchema = z.object(limitShape).passthrough();
/** The limit fields of a node or plan, parsed (durations in ms). */
export type LimitPart = z.infer<typeof planSchema>;
