// zod schemas of the public routes' answers (their request bodies are in ../schemas.ts): what the
// OpenAPI document says each route answers.
import { z } from 'zod';

const iso = z.iso.datetime({ offset: true });
const issue = z.object({ path: z.string(), message: z.string(), code: z.string() });

/** Every error answer (src/http/problem.ts). */
export const problemSchema = z.object({
  error: z.string(),
  code: z.string(),
  message: z.string(),
  issues: z.array(issue).optional(),
  /** 409: the job's state. */
  state: z.string().optional(),
  /** 503 while a queue drains: `draining`. */
  reason: z.string().optional(),
});

/** A 429 of a submit or of an operator's retry. */
export const refusalSchema = z.object({
  error: z.literal('rate_limit_exceeded'),
  retry_after: z.number().int(),
  reason: z.enum(['queue_full', 'wait_too_long', 'quota_exhausted']).optional(),
  message: z.string(),
});

export const submittedSchema = z.object({
  id: z.string(),
  queue: z.string(),
  state: z.literal('queued'),
  startsAt: iso,
  position: z.number().int(),
  duplicate: z.literal(true).optional(),
});

/** A spend quota and its use in the current window. */
export const quotaUseSchema = z.object({
  scope: z.enum(['key', 'queue']),
  period: z.enum(['day', 'month']),
  unit: z.enum(['calls', 'cost']),
  limit: z.number().int(),
  /** A cost quota's use may be fractional (a reconciled actual cost). */
  used: z.number(),
  resetsAt: iso,
  timeZone: z.string(),
});

export const jobStatusSchema = z.object({
  id: z.string(),
  queue: z.string(),
  state: z.enum(['queued', 'active', 'completed', 'failed']),
  attemptsMade: z.number().int(),
  startsAt: iso.optional(),
  submittedAt: iso,
  startedAt: iso.optional(),
  finishedAt: iso.optional(),
  result: z.unknown().optional(),
  failedReason: z.string().optional(),
  /** The last progress its handler reported (job.progress(value)). */
  progress: z.unknown().optional(),
  /** A queued job's spend quotas (its key's, the queue's) in their current window. */
  quotas: z.array(quotaUseSchema).optional(),
  /** Its callback_url and every delivery attempt (at, delivered, status or error, durationMs). */
  callback: z
    .object({
      url: z.string(),
      delivered: z.boolean(),
      attempts: z.array(z.object({ at: iso, delivered: z.boolean(), status: z.number().int().optional(), error: z.string().optional(), durationMs: z.number() })),
    })
    .optional(),
});

const entry = z.object({ key: z.string(), value: z.string() });
export const decisionResponseSchema = z.object({
  allowed: z.boolean(),
  retry_after: z.number().int().optional(),
  statuses: z.array(
    z.object({
      descriptor: z.array(entry),
      code: z.enum(['OK', 'OVER_LIMIT']),
      rule: z.string().nullable(),
      shadow: z.boolean().optional(),
      unlimited: z.boolean().optional(),
      allowed: z.boolean().optional(),
      limit: z.number().optional(),
      remaining: z.number().optional(),
      retry_after_ms: z.number().optional(),
      reset_at: iso.optional(),
      lease_id: z.string().optional(),
      failure: z.string().optional(),
    }),
  ),
});

export const releaseResponseSchema = z.object({ released: z.boolean(), rule: z.string() });
export const healthSchema = z.object({ status: z.literal('ok') });
export const readySchema = z.object({ status: z.enum(['ready', 'not_ready']), checks: z.object({ redis: z.string(), rules: z.string() }) });
export const jobParams = z.object({ queue: z.string(), id: z.string() });
export const queueParams = z.object({ queue: z.string() });
