// /v1/admin/queues: every queue with its settings and live figures; pause, resume, drain and undrain a queue.
import { Router, type Request, type Response } from 'express';
import { pauseQueue, resumeQueue } from '../../admin/queue-pause.js';
import { DEFAULT_JSON_MAX_DEPTH } from '../deps.js';
import { jsonBody, parseBody, requireJson } from '../body.js';
import { iso, parsePart, queueOf, record, send, type AdminContext } from './context.js';
import { queueOverviews } from './overview.js';
import { drainResponseSchema, pauseBodySchema, queueParamsSchema, queuePauseResponseSchema, queuesResponseSchema } from './schemas.js';

export function queueRoutes(ctx: AdminContext): Router {
  const router = Router();
  router.get('/v1/admin/queues', async (_req: Request, res: Response) => {
    send(res, 200, queuesResponseSchema, { queues: await queueOverviews(ctx) });
  });

  const body = [requireJson(), jsonBody(16 * 1024, DEFAULT_JSON_MAX_DEPTH)];
  router.post('/v1/admin/queues/:queue/pause', ...body, async (req: Request, res: Response) => {
    const { queue } = parsePart(queueParamsSchema, req.params, 'path');
    const { until } = parseBody(pauseBodySchema, req);
    const { throttle } = await queueOf(ctx, queue);
    const untilMs = until === undefined ? undefined : Date.parse(until);
    await pauseQueue(throttle, ctx.store, untilMs);
    await record(ctx, req, 'queue.pause', { queue, details: until ? { until } : {} });
    send(res, 200, queuePauseResponseSchema, { queue, paused: true, pausedUntil: iso(untilMs) });
  });
  router.post('/v1/admin/queues/:queue/resume', async (req: Request, res: Response) => {
    const { queue } = parsePart(queueParamsSchema, req.params, 'path');
    const { throttle } = await queueOf(ctx, queue);
    await resumeQueue(throttle, ctx.store);
    await record(ctx, req, 'queue.resume', { queue });
    send(res, 200, queuePauseResponseSchema, { queue, paused: false });
  });
  for (const [path, on] of [['drain', true], ['undrain', false]] as const) {
    router.post(`/v1/admin/queues/:queue/${path}`, async (req: Request, res: Response) => {
      const { queue } = parsePart(queueParamsSchema, req.params, 'path');
      const { throttle } = await queueOf(ctx, queue);
      await ctx.store.setDrain(throttle.keys, on);
      await record(ctx, req, `queue.${path}`, { queue });
      send(res, 200, drainResponseSchema, { queue, draining: on });
    });
  }
  return router;
}
