// /v1/admin/queues: every queue with its settings and live figures; pause, resume, drain and undrain a queue.
import { Router, type Request, type Response } from 'express';
import { readFigures } from '../../admin/figures.js';
import { pauseQueue, resumeQueue } from '../../admin/queue-pause.js';
import type { QueueRule } from '../../rules/index.js';
import type { Throttle } from '../../throttle/throttle.js';
import { DEFAULT_JSON_MAX_DEPTH } from '../deps.js';
import { jsonBody, parseBody, requireJson } from '../body.js';
import { iso, parsePart, queueOf, record, send, type AdminContext } from './context.js';
import { drainResponseSchema, pauseBodySchema, queueParamsSchema, queuePauseResponseSchema, queuesResponseSchema } from './schemas.js';
import type { z } from 'zod';

type Overview = z.input<typeof queuesResponseSchema>['queues'][number];

export function queueRoutes(ctx: AdminContext): Router {
  const router = Router();
  router.get('/v1/admin/queues', async (_req: Request, res: Response) => {
    const queues = ctx.deps.rules.current().queues;
    const overviews = await Promise.all(queues.map(async (q) => overview(ctx, q, (await queueOf(ctx, q.name)).throttle)));
    send(res, 200, queuesResponseSchema, { queues: overviews });
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

async function overview(ctx: AdminContext, q: QueueRule, throttle: Throttle): Promise<Overview> {
  const redis = ctx.deps.sluice.redis;
  const bull = await throttle.bullQueue();
  const now = Date.now();
  const [counts, busyLanes, control, figures, paused, overrides, globalSlot] = await Promise.all([
    bull.getJobCounts('waiting', 'delayed', 'prioritized', 'active', 'failed'),
    redis.zcard(throttle.keys.busy),
    ctx.store.control(throttle.keys),
    readFigures(redis, ctx.keys, throttle.keys, now),
    bull.isPaused(),
    redis.hlen(ctx.keys.overrides(throttle.keys)),
    throttle.config.globalRatePerSecond ? redis.hget(throttle.keys.global, 's') : Promise.resolve(null),
  ]);
  const c = throttle.config;
  const globalBookedMs = globalSlot === null ? undefined : Math.ceil(Number(globalSlot) / 1000);
  return {
    name: q.name,
    config: {
      ratePerSecond: c.ratePerSecond,
      capacity: c.capacity,
      burst: c.burst,
      ...(c.maxWaitMs !== undefined ? { maxWaitMs: c.maxWaitMs } : {}),
      ...(c.globalRatePerSecond !== undefined ? { globalRatePerSecond: c.globalRatePerSecond } : {}),
      key: q.key.type === 'header' ? `header:${q.key.name}` : q.key.type,
      plans: c.plans ?? {},
      ...(c.defaultPlan !== undefined ? { defaultPlan: c.defaultPlan } : {}),
    },
    live: {
      queued: (counts.waiting ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0),
      active: counts.active ?? 0,
      failed: counts.failed ?? 0,
      busyLanes,
      ...figures,
      paused: paused || control.paused,
      ...(control.pauseUntilMs !== undefined ? { pausedUntil: iso(control.pauseUntilMs) } : {}),
      draining: control.draining,
      ...(c.globalRatePerSecond
        ? {
            globalCap: {
              ratePerSecond: c.globalRatePerSecond,
              inUse: figures.startedLast1s / c.globalRatePerSecond,
              ...(globalBookedMs !== undefined && globalBookedMs > now ? { bookedUntil: iso(globalBookedMs) } : {}),
            },
          }
        : {}),
      overrides,
    },
  };
}
