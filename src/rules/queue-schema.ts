// The `queues:` section: throttled job queues (lanes per key drained at a fixed rate; their settings
// are the throttle's own, see queue-throttle.ts) and the handler each one's jobs run.
import { z } from 'zod';
import { durationSchema } from './duration.js';
import { HEADER_NAME, headerNameSchema } from './http-schema.js';
import { nameSchema } from './limit-schema.js';
import { queueThrottleFields } from './queue-throttle.js';

/** Where a job's lane key comes from: the body's `key`, or the submitter's identity. */
export const queueKeySchema = z.string().refine((s) => ['tenant', 'body', 'api_key', 'user', 'ip'].includes(s) || /^header:[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(s), {
  message: 'must be one of tenant, body, api_key, user, ip or header:<Name>',
});

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
    /**
     * Where a call's actual cost is in the answer, for a queue that counts cost units other than calls:
     * `graphql` (points: `extensions.cost.actualQueryCost`, the bucket's status as the budget) or
     * `openai_usage` (tokens: `usage.total_tokens`, the tokens budget headers as the budget). Absent:
     * the queue counts calls and no cost is read.
     */
    cost_from: z.enum(['graphql', 'openai_usage']).optional(),
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
    ...queueThrottleFields,
    key: queueKeySchema.optional(),
    handler: handlerSchema,
  })
  .strict();
/** A parsed queue (durations in ms; backoff and plans already under the throttle's names). */
export type QueueSpec = z.infer<typeof queueSchema>;

/** True when `name` is a header name whose value must come from the environment. */
export function isSecretHeader(name: string): boolean {
  return HEADER_NAME.test(name) && SECRET_HEADER.test(name);
}
