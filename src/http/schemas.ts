// zod schemas of every HTTP body: the single source of truth for validation and for the docs.
import { z } from 'zod';

/** POST /v1/queues/:queue/jobs */
export const submitBodySchema = z
  .object({
    /** The lane key, when the queue takes it from the body (its `key` source is `body`). */
    key: z.string().min(1).max(1024).optional(),
    /** Any JSON value; the job's handler receives it. */
    payload: z.json(),
    cost: z.number().int().positive().optional(),
    /** The same key submitted twice is admitted once. */
    idempotencyKey: z.string().min(1).max(256).optional(),
    /** POST the outcome here once the job completed or failed for good (host in the rules' callbacks.allow). */
    callback_url: z.string().min(1).max(2048).optional(),
  })
  .strict();
export type SubmitBody = z.infer<typeof submitBodySchema>;

const entrySchema = z.object({ key: z.string().min(1).max(256), value: z.string().max(1024) }).strict();
const descriptorSchema = z.union([entrySchema, z.object({ entries: z.array(entrySchema).min(1).max(16) }).strict()]);

/**
 * POST /v1/decisions (Envoy-style). Each element of `descriptors` is one descriptor: either a
 * single entry `{ key, value }` or an ordered list of entries `{ entries: [{ key, value }, ...] }`.
 */
export const decisionBodySchema = z
  .object({
    domain: z.string().min(1).max(128),
    descriptors: z.array(descriptorSchema).min(1).max(32),
    cost: z.number().int().positive().optional(),
  })
  .strict();
export type DecisionBody = z.infer<typeof decisionBodySchema>;

/** POST /v1/decisions/release — give back the lease a concurrency rule's status carried. */
export const releaseBodySchema = z
  .object({
    domain: z.string().min(1).max(128),
    descriptor: descriptorSchema,
    lease_id: z.string().min(1).max(128),
  })
  .strict();
export type ReleaseBody = z.infer<typeof releaseBodySchema>;

/** GET /v1/queues/:queue/jobs/:id: `?wait=<seconds>` long-polls (0 to 30; larger is clamped to 30). */
export const jobStatusQuerySchema = z
  .object({
    // Digits with an optional fraction: '' and ' ' (which a plain coercion reads as 0) are refused too.
    wait: z
      .string()
      .regex(/^\d+(\.\d+)?$/, 'a number of seconds >= 0')
      .transform(Number)
      .optional(),
  });
