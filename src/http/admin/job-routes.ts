// /v1/admin/queues/{queue}/jobs: failed jobs paged, any job's detail, retry of a failed job through
// its lane, and cancel of a queued job (its lane units freed in the same step).
import { Router, type Request, type Response } from 'express';
import { cancelJob, failedJobs, jobDetail, retryJob, type CancelResult, type JobDetail } from '../../admin/jobs.js';
import { SluiceError } from '../../errors.js';
import { iso, parsePart, queueOf, record, send, type AdminContext } from './context.js';
import { cancelResponseSchema, failedJobsQuerySchema, failedJobsResponseSchema, jobDetailResponseSchema, jobParamsSchema, queueParamsSchema, retryResponseSchema } from './schemas.js';

export function jobView(queue: string, d: JobDetail) {
  const { submittedAtMs, startsAtMs, startedAtMs, finishedAtMs, ...rest } = d;
  return {
    ...rest,
    queue,
    submittedAt: iso(submittedAtMs)!,
    ...(startsAtMs !== undefined ? { startsAt: iso(startsAtMs) } : {}),
    ...(startedAtMs !== undefined ? { startedAt: iso(startedAtMs) } : {}),
    ...(finishedAtMs !== undefined ? { finishedAt: iso(finishedAtMs) } : {}),
  };
}

/** The error of a cancel that did not happen: 404 for a job that is not there (or not the caller's), 409 with its state. */
export function cancelRefusal(queue: string, id: string, result: Extract<CancelResult, { cancelled: false }>): SluiceError {
  if (result.state === 'missing') return new SluiceError('SLUICE_ERR_NOT_FOUND', `no job '${id}' in queue '${queue}'`);
  return new SluiceError('SLUICE_ERR_CONFLICT', `job '${id}' is ${result.state}: only a queued job can be cancelled`, { details: { state: result.state } });
}

export function jobRoutes(ctx: AdminContext): Router {
  const router = Router();

  router.get('/v1/admin/queues/:queue/jobs', async (req: Request, res: Response) => {
    const { queue } = parsePart(queueParamsSchema, req.params, 'path');
    const { limit, cursor } = parsePart(failedJobsQuerySchema, req.query, 'query');
    const offset = cursor === undefined ? 0 : Number(cursor);
    if (!Number.isInteger(offset) || offset < 0) {
      throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', 'invalid query: cursor: not a cursor this API returned', {
        details: [{ path: 'cursor', message: 'not a cursor this API returned', code: 'custom' }],
      });
    }
    const { throttle } = await queueOf(ctx, queue);
    const page = await failedJobs(throttle, limit, offset);
    send(res, 200, failedJobsResponseSchema, { queue, total: page.total, jobs: page.jobs.map((j) => jobView(queue, j)), ...(page.next !== undefined ? { next: String(page.next) } : {}) });
  });

  router.get('/v1/admin/queues/:queue/jobs/:id', async (req: Request, res: Response) => {
    const { queue, id } = parsePart(jobParamsSchema, req.params, 'path');
    const { throttle } = await queueOf(ctx, queue);
    const detail = await jobDetail(throttle, id);
    if (!detail) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no job '${id}' in queue '${queue}' (unknown, or removed after its retention)`);
    send(res, 200, jobDetailResponseSchema, jobView(queue, detail));
  });

  router.post('/v1/admin/queues/:queue/jobs/:id/retry', async (req: Request, res: Response) => {
    const { queue, id } = parsePart(jobParamsSchema, req.params, 'path');
    const { throttle } = await queueOf(ctx, queue);
    const result = await retryJob(throttle, id);
    if (!result.retried) {
      if (result.reason === 'missing') throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no job '${id}' in queue '${queue}'`);
      if (result.reason === 'not_failed') {
        throw new SluiceError('SLUICE_ERR_CONFLICT', `job '${id}' is ${result.state}: only a failed job can be retried`, { details: { state: result.state } });
      }
      const retryAfter = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
      res.setHeader('Retry-After', String(retryAfter));
      res.status(429).json({
        error: 'rate_limit_exceeded',
        retry_after: retryAfter,
        reason: result.reason,
        message: `the job's lane in queue '${queue}' is ${result.reason === 'queue_full' ? `full (capacity ${result.capacity})` : result.reason === 'quota_exhausted' ? 'out of its spend quota for this window' : 'too far behind'}; retry in ${retryAfter} s`,
      });
      return;
    }
    await record(ctx, req, 'job.retry', { queue, target: id });
    send(res, 202, retryResponseSchema, { id, queue, state: 'queued', startsAt: iso(result.startsAtMs)!, position: result.position });
  });

  router.post('/v1/admin/queues/:queue/jobs/:id/cancel', async (req: Request, res: Response) => {
    const { queue, id } = parsePart(jobParamsSchema, req.params, 'path');
    const { throttle } = await queueOf(ctx, queue);
    const result = await cancelJob(ctx.scripts, ctx.deps.sluice.redis, throttle, id);
    if (!result.cancelled) throw cancelRefusal(queue, id, result);
    await record(ctx, req, 'job.cancel', { queue, target: id, details: { freedUnits: result.freedUnits } });
    send(res, 200, cancelResponseSchema, { id, queue, cancelled: true, freedUnits: result.freedUnits, previousState: result.previousState });
  });
  return router;
}
