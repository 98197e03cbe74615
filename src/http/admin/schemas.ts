// zod schemas of the admin API (/v1/admin/...): path parameters, queries, bodies and answers. The
// routes parse with them and the OpenAPI document is generated from them: one source of truth.
import { z } from 'zod';
import { overrideBodySchema } from '../../admin/override.js';
import { quotaUseSchema } from '../openapi/public-schemas.js';

export { overrideBodySchema };

const iso = z.iso.datetime({ offset: true });

/** Path parameters. */
export const queueParamsSchema = z.object({ queue: z.string().min(1).max(64) }).strict();
export const laneParamsSchema = z.object({ queue: z.string().min(1).max(64), lane: z.string().min(1).max(300) }).strict();
export const jobParamsSchema = z.object({ queue: z.string().min(1).max(64), id: z.string().min(1).max(300) }).strict();

/** `?limit=&cursor=`: pages of lanes, jobs and audit entries. */
export const pageQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    /** The `next` of the previous page. */
    cursor: z.string().min(1).max(1000).optional(),
  })
  .strict();

export const failedJobsQuerySchema = pageQuerySchema.extend({ state: z.literal('failed').default('failed') }).strict();

/** POST .../pause: until a time, or until resumed. */
export const pauseBodySchema = z.object({ until: iso.optional() }).strict();

/** POST .../lane-id: a lane key, as a submit gives it (the body's `key`, a header's value, the tenant's name). */
export const laneIdBodySchema = z.object({ key: z.string().min(1).max(1024) }).strict();
export const laneIdResponseSchema = z.object({ queue: z.string(), lane: z.string() });

/** POST /v1/admin/decisions/reset: the descriptor whose rule's counter for it is cleared. */
const entrySchema = z.object({ key: z.string().min(1).max(256), value: z.string().max(1024) }).strict();
export const resetBodySchema = z
  .object({
    domain: z.string().min(1).max(128),
    descriptor: z.union([entrySchema, z.object({ entries: z.array(entrySchema).min(1).max(16) }).strict()]),
  })
  .strict();

const planLimits = z.object({ ratePerSecond: z.number(), capacity: z.number().int(), burst: z.number().int().optional(), maxWaitMs: z.number().int().optional() });
const laneLimits = z.object({ ratePerSecond: z.number(), capacity: z.number().int(), burst: z.number().int(), maxWaitMs: z.number().int() });

export const overrideSchema = z.object({
  lane: z.string(),
  ratePerSecond: z.number().optional(),
  capacity: z.number().int().optional(),
  burst: z.number().int().optional(),
  maxWaitMs: z.number().int().optional(),
  until: iso.optional(),
  by: z.string(),
  at: iso,
});

export const queueOverviewSchema = z.object({
  name: z.string(),
  config: z.object({
    ratePerSecond: z.number(),
    capacity: z.number().int(),
    burst: z.number().int(),
    maxWaitMs: z.number().int().optional(),
    globalRatePerSecond: z.number().optional(),
    key: z.string(),
    plans: z.record(z.string(), planLimits),
    defaultPlan: z.string().optional(),
  }),
  live: z.object({
    queued: z.number().int(),
    active: z.number().int(),
    failed: z.number().int(),
    busyLanes: z.number().int(),
    /**
     * Cost units of jobs whose worker did not say they started within a second of their start (a dead or
     * stalled worker), taken for started since the queue's state began: docs/algorithms.md, "Admission".
     */
    silentUnits: z.number().int(),
    startedLast1s: z.number().int(),
    startedLast60s: z.number().int(),
    refusedLast60s: z.number().int(),
    paused: z.boolean(),
    pausedUntil: iso.optional(),
    draining: z.boolean(),
    /** With a global cap: the share of it used in the last whole second (0..1+), and until when its meter is booked. */
    globalCap: z
      .object({
        ratePerSecond: z.number(),
        inUse: z.number(),
        bookedUntil: iso.optional(),
        /** A sharded throttle: how the cap is divided now, shard by shard (docs/algorithms.md, "A throttle across a cluster"). */
        shards: z
          .array(
            z.object({
              shard: z.number().int(),
              busyLanes: z.number().int(),
              /** The sum of its busy lanes' own rates (cost units per second). */
              demand: z.number(),
              /** Its share of the cap now (starts per second): the allocator's, or the equal split when none holds. */
              share: z.number().int(),
            }),
          )
          .optional(),
      })
      .optional(),
    overrides: z.number().int(),
  }),
});
export const queuesResponseSchema = z.object({ queues: z.array(queueOverviewSchema) });

export const lanePageResponseSchema = z.object({
  queue: z.string(),
  total: z.number().int(),
  lanes: z.array(z.object({ lane: z.string(), depth: z.number().int() })),
  next: z.string().optional(),
});

export const laneDetailResponseSchema = z.object({
  queue: z.string(),
  lane: z.string(),
  depth: z.number().int(),
  jobs: z.number().int(),
  limits: laneLimits,
  plan: z.string().optional(),
  override: overrideSchema.optional(),
  nextStartAt: iso,
  pausedUntil: iso.optional(),
  queued: z.array(z.object({ id: z.string(), cost: z.number().int(), predictedStartAt: iso })),
  /** The queue's spend quotas: this lane's use of a key quota, the queue's of a queue quota. */
  quotas: z.array(quotaUseSchema).optional(),
});

export const jobDetailResponseSchema = z.object({
  id: z.string(),
  queue: z.string(),
  state: z.string(),
  tenant: z.string().optional(),
  plan: z.string().optional(),
  lane: z.string().optional(),
  cost: z.number().int().optional(),
  attemptsMade: z.number().int(),
  payload: z.unknown().optional(),
  result: z.unknown().optional(),
  failedReason: z.string().optional(),
  stacktrace: z.array(z.string()).optional(),
  submittedAt: iso,
  startsAt: iso.optional(),
  startedAt: iso.optional(),
  finishedAt: iso.optional(),
});

export const failedJobsResponseSchema = z.object({ queue: z.string(), total: z.number().int(), jobs: z.array(jobDetailResponseSchema), next: z.string().optional() });

export const retryResponseSchema = z.object({ id: z.string(), queue: z.string(), state: z.literal('queued'), startsAt: iso, position: z.number().int() });

export const cancelResponseSchema = z.object({
  id: z.string(),
  queue: z.string(),
  cancelled: z.literal(true),
  /** Lane units given back (0 when the job was a retry whose units were already used). */
  freedUnits: z.number().int(),
  previousState: z.string(),
});

export const queuePauseResponseSchema = z.object({ queue: z.string(), paused: z.boolean(), pausedUntil: iso.optional() });
export const lanePauseResponseSchema = z.object({ queue: z.string(), lane: z.string(), paused: z.boolean(), pausedUntil: iso.optional() });
export const drainResponseSchema = z.object({ queue: z.string(), draining: z.boolean() });
export const overridesResponseSchema = z.object({ queue: z.string(), overrides: z.array(overrideSchema) });
export const overrideRemovedResponseSchema = z.object({ queue: z.string(), lane: z.string(), removed: z.literal(true) });
export const resetResponseSchema = z.object({ domain: z.string(), rule: z.string(), reset: z.literal(true) });

export const auditResponseSchema = z.object({
  entries: z.array(
    z.object({
      id: z.string(),
      at: iso,
      who: z.string(),
      token: z.string(),
      action: z.string(),
      queue: z.string().optional(),
      target: z.string().optional(),
      details: z.unknown().optional(),
    }),
  ),
  next: z.string().optional(),
});
