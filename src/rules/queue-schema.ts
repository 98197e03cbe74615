// The `queues:` section: throttled job queues (lanes per key drained at a fixed rate) and the
// handler each one's jobs run.
import { z } from 'zod';
import { durationSchema } from './duration.js';
import { HEADER_NAME, headerNameSchema } from './http-schema.js';
import { nameSchema } from './limit-schema.js';

/** Where a job's lane key comes from: the body's `key`, or the submitter's identity. */
export const queueKeySchema = z.string().refine((s) => ['tenant', 'body', 'api_key', 'user', 'ip'].includes(s) || /^header:[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(s), {
  message: 'must be one of tenant, body, api_key, user, ip or header:<Name>',
});

/** A plan's lane settings in one queue: what a tenant on this plan gets instead of the queue's own. */
export const queuePlanSchema = z
  .object({
    rate_per_second: z.number().positive().max(100_000),
    capacity: z.number().int().positive().max(10_000_000),
    burst: z.number().int().nonnegative().max(1_000_000).optional(),
    max_wait: durationSchema().optional(),
  })
  .strict();

/** An upstream header value: only ever from an environment variable, so no secret sits in the file. */
export const envRefSchema = z.object({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name') }).strict();

/**
 * A header value: `{ env: VAR }`, or a literal string for headers that carry no secret (such as
 * `Accept`). Literal values of secret-looking headers are refused by the semantic checks.
 */
export const headerValueSchema = z.union([envRefSchema, z.string()]);

/** Header names whose literal values are refused: they carry credentials. */
export const SECRET_HEADER = /authorization|token|key|secret|password|passwd|cookie|credential|session|signature/i;

const httpHandlerSchema = z
  .object({
    type: z.literal('http'),
    url: z.string().refine((u) => {
      try {
        return ['http:', 'https:'].includes(new URL(u).protocol);
      } catch {
        return false;
      }
    }, 'an absolute http:// or https:// URL'),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).optional(),
    timeout: durationSchema({ maxMs: 10 * 60_000 }).optional(),
    headers: z.record(headerNameSchema, headerValueSchema).optional(),
  })
  .strict();

const moduleHandlerSchema = z
  .object({
    type: z.literal('module'),
    /** Path to a JS/TS module exporting the handler, relative to the rules file. */
    path: z.string().min(1),
    /** Export name (default: `default`). */
    export: z.string().regex(/^[A-Za-z_$][\w$]*$/).optional(),
  })
  .strict();

/** A queue's handler: `http` (forward to an upstream) or `module` (run an exported function). */
export const handlerSchema = z.discriminatedUnion('type', [httpHandlerSchema, moduleHandlerSchema], {
  error: (iss) => (iss.code === 'invalid_union' ? "type must be 'http' or 'module'" : undefined),
});

/** One queue of the `queues:` section. */
export const queueSchema = z
  .object({
    name: nameSchema,
    /** Jobs (cost units) started per second per key: the leak rate. */
    rate_per_second: z.number().positive().max(100_000),
    /** Jobs (cost units) a key's lane holds: the bucket size. */
    capacity: z.number().int().positive().max(10_000_000),
    /** Refuse at admission when the wait would be longer than this. */
    max_wait: durationSchema().optional(),
    /** Starts per second across all keys (an upstream's own limit). */
    global_rate_per_second: z.number().positive().max(100_000).optional(),
    burst: z.number().int().nonnegative().max(1_000_000).optional(),
    attempts: z.number().int().positive().max(1_000).optional(),
    backoff: z
      .object({ type: z.enum(['fixed', 'exponential']), delay: durationSchema({ minMs: 0, maxMs: 7 * 86_400_000 }) })
      .strict()
      .optional(),
    max_payload_bytes: z.number().int().positive().max(64 * 1024 * 1024).optional(),
    key: queueKeySchema.optional(),
    /** Lane settings per plan (a tenant names its plan in the auth section). */
    plans: z.record(nameSchema, queuePlanSchema).optional(),
    /** The plan of tenants without one (or with one this queue does not define); absent: the settings above. */
    default_plan: nameSchema.optional(),
    handler: handlerSchema,
  })
  .strict();
/** A parsed queue (durations in ms). */
export type QueueSpec = z.infer<typeof queueSchema>;

/** True when `name` is a header name whose value must come from the environment. */
export function isSecretHeader(name: string): boolean {
  return HEADER_NAME.test(name) && SECRET_HEADER.test(name);
}
