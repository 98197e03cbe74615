// GET /v1/queues/:queue/jobs/:id — a job's state, attempts, result or failure reason, and its start.
// Under authentication only the tenant that submitted it sees it: another tenant's job is a 404.
import { Router, type Request, type Response } from 'express';
import type { AppDeps } from '../deps.js';
import { markRedisAnswered } from '../redis-outage-log.js';
import { SluiceError } from '../../errors.js';
import type { QueueThrottles } from '../queue-throttles.js';
import { tenantAuth, tenantOf } from '../tenant-auth.js';

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

export function jobStatusRoute(deps: AppDeps, throttles: QueueThrottles): Router {
  const router = Router();
  router.get('/v1/queues/:queue/jobs/:id', tenantAuth(deps), async (req: Request, res: Response) => {
    const tenant = tenantOf(res);
    const queueName = String(req.params.queue);
    const queue = deps.rules.current().queue(queueName);
    if (!queue) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no queue '${queueName}'`);
    const id = String(req.params.id);
    const status = await throttles.of(queue).job(id, tenant ? { tenant: tenant.name } : {});
    markRedisAnswered(res);
    if (!status) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no job '${id}' in queue '${queue.name}' (unknown, or removed after its retention)`);
    res.json({
      id: status.id,
      queue: queue.name,
      state: status.state,
      attemptsMade: status.attemptsMade,
      startsAt: iso(status.startsAtMs),
      submittedAt: iso(status.submittedAtMs),
      startedAt: iso(status.startedAtMs),
      finishedAt: iso(status.finishedAtMs),
      ...(status.state === 'completed' ? { result: status.result ?? null } : {}),
      ...(status.failedReason ? { failedReason: status.failedReason } : {}),
    });
  });
  return router;
}
