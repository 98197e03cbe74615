// /v1/admin/queues/{queue}/lanes and /overrides: the busy lanes page by page, a lane's detail, pause
// and resume of one lane, and operators' overrides of a lane's settings.
import { Router, type Request, type Response } from 'express';
import { applyOverride, laneDetail, lanePage, pauseLane, resumeLane } from '../../admin/lanes.js';
import { limitsOfOverride, type StoredOverride } from '../../admin/override.js';
import { endTimedOverride } from '../../admin/override-end.js';
import { SluiceError } from '../../errors.js';
import { DEFAULT_JSON_MAX_DEPTH } from '../deps.js';
import { jsonBody, parseBody, requireJson } from '../body.js';
import { actorOf, iso, parsePart, queueOf, record, send, type AdminContext } from './context.js';
import { quotaView } from '../live/job-view.js';
import {
  laneDetailResponseSchema,
  laneIdBodySchema,
  laneIdResponseSchema,
  lanePageResponseSchema,
  laneParamsSchema,
  lanePauseResponseSchema,
  overrideBodySchema,
  overrideRemovedResponseSchema,
  overrideSchema,
  overridesResponseSchema,
  pageQuerySchema,
  pauseBodySchema,
  queueParamsSchema,
} from './schemas.js';

export function overrideView(o: StoredOverride) {
  const { untilMs, atMs, ...rest } = o;
  return { ...rest, ...(untilMs !== undefined ? { until: iso(untilMs)! } : {}), at: iso(atMs)! };
}

export function laneRoutes(ctx: AdminContext): Router {
  const router = Router();
  const body = [requireJson(), jsonBody(16 * 1024, DEFAULT_JSON_MAX_DEPTH)];

  router.get('/v1/admin/queues/:queue/lanes', async (req: Request, res: Response) => {
    const { queue } = parsePart(queueParamsSchema, req.params, 'path');
    const { limit, cursor } = parsePart(pageQuerySchema, req.query, 'query');
    const { throttle } = await queueOf(ctx, queue);
    const page = await lanePage(ctx.scripts, throttle, limit, cursor);
    send(res, 200, lanePageResponseSchema, { queue, ...page });
  });

  // The lane id of a key, hashed exactly as a submit stores it (with the server's hash secret, if any):
  // the dashboard searches lanes by key with it. A POST body, so the key is in no URL or access log.
  router.post('/v1/admin/queues/:queue/lane-id', ...body, async (req: Request, res: Response) => {
    const { queue } = parsePart(queueParamsSchema, req.params, 'path');
    const { key } = parseBody(laneIdBodySchema, req);
    const { throttle } = await queueOf(ctx, queue);
    send(res, 200, laneIdResponseSchema, { queue, lane: throttle.keys.laneId(key) });
  });

  router.get('/v1/admin/queues/:queue/lanes/:lane', async (req: Request, res: Response) => {
    const { queue, lane } = parsePart(laneParamsSchema, req.params, 'path');
    const { throttle } = await queueOf(ctx, queue);
    const [detail, override, quotas] = await Promise.all([
      laneDetail(ctx.deps.sluice.redis, throttle, lane),
      ctx.store.override(throttle.keys, lane, Date.now()),
      throttle.quotaUse(lane),
    ]);
    if (!detail && !override) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no lane '${lane}' in queue '${queue}' (no queued work, pause or override)`);
    const limits = throttle.limitsOf(lane, detail?.plan);
    send(res, 200, laneDetailResponseSchema, {
      queue,
      lane,
      depth: detail?.depth ?? 0,
      jobs: detail?.jobs ?? 0,
      limits,
      ...(detail?.plan !== undefined ? { plan: detail.plan } : {}),
      ...(override ? { override: overrideView(override) } : {}),
      nextStartAt: iso(detail?.nextStartAtMs ?? Date.now())!,
      ...(detail?.pausedUntilMs !== undefined ? { pausedUntil: iso(detail.pausedUntilMs) } : {}),
      queued: (detail?.queued ?? []).map((j) => ({ id: j.id, cost: j.cost, predictedStartAt: iso(j.predictedStartAtMs)! })),
      ...(quotas.length > 0 ? { quotas: quotas.map(quotaView) } : {}),
    });
  });

  router.post('/v1/admin/queues/:queue/lanes/:lane/pause', ...body, async (req: Request, res: Response) => {
    const { queue, lane } = parsePart(laneParamsSchema, req.params, 'path');
    const { until } = parseBody(pauseBodySchema, req);
    const { throttle } = await queueOf(ctx, queue);
    const resumesMs = await pauseLane(throttle, lane, until === undefined ? undefined : Date.parse(until), Date.now());
    await record(ctx, req, 'lane.pause', { queue, target: lane, details: until ? { until } : {} });
    send(res, 200, lanePauseResponseSchema, { queue, lane, paused: true, pausedUntil: iso(resumesMs) });
  });

  router.post('/v1/admin/queues/:queue/lanes/:lane/resume', async (req: Request, res: Response) => {
    const { queue, lane } = parsePart(laneParamsSchema, req.params, 'path');
    const { throttle } = await queueOf(ctx, queue);
    await resumeLane(ctx.scripts, ctx.deps.sluice.redis, throttle, lane);
    await record(ctx, req, 'lane.resume', { queue, target: lane });
    send(res, 200, lanePauseResponseSchema, { queue, lane, paused: false });
  });

  router.get('/v1/admin/queues/:queue/overrides', async (req: Request, res: Response) => {
    const { queue } = parsePart(queueParamsSchema, req.params, 'path');
    const { throttle } = await queueOf(ctx, queue);
    const { inForce, ended } = await ctx.store.overrides(throttle.keys, Date.now());
    // An ended override the control plane has not removed yet (it polls every 250 ms) is ended here, in
    // full: removed only if still the stored one, its lane paced by its plan again, audited.
    for (const lane of ended) await endTimedOverride(ctx.deps.sluice.redis, throttle, ctx.store, ctx.audit, lane);
    send(res, 200, overridesResponseSchema, { queue, overrides: inForce.map(overrideView) });
  });

  router.put('/v1/admin/queues/:queue/overrides/:lane', ...body, async (req: Request, res: Response) => {
    const { queue, lane } = parsePart(laneParamsSchema, req.params, 'path');
    const override = parseBody(overrideBodySchema, req);
    if (override.until !== undefined && Date.parse(override.until) <= Date.now()) {
      const message = 'must be in the future';
      throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', `invalid request body: until: ${message}`, { details: [{ path: 'until', message, code: 'too_small' }] });
    }
    const { throttle } = await queueOf(ctx, queue);
    const { stored, version } = await ctx.store.setOverride(throttle.keys, lane, override, actorOf(req), Date.now());
    await applyOverride(ctx.deps.sluice.redis, throttle, lane, limitsOfOverride(stored), version);
    await record(ctx, req, 'override.set', { queue, target: lane, details: override });
    send(res, 200, overrideSchema, overrideView(stored));
  });

  router.delete('/v1/admin/queues/:queue/overrides/:lane', async (req: Request, res: Response) => {
    const { queue, lane } = parsePart(laneParamsSchema, req.params, 'path');
    const { throttle } = await queueOf(ctx, queue);
    const { removed, version } = await ctx.store.removeOverride(throttle.keys, lane);
    if (!removed) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no override for lane '${lane}' in queue '${queue}'`);
    await applyOverride(ctx.deps.sluice.redis, throttle, lane, undefined, version);
    await record(ctx, req, 'override.remove', { queue, target: lane });
    send(res, 200, overrideRemovedResponseSchema, { queue, lane, removed: true });
  });
  return router;
}

