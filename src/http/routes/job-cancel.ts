// DELETE /v1/queues/:queue/jobs/:id — a tenant cancels its own queued job: removed with its lane
// units freed in one step; a started or finished job is 409 with its state; another tenant's is 404.
import { Router, type Request, type Response } from 'express';
import { cancelJob } from '../../admin/jobs.js';
import { SluiceError } from '../../errors.js';
import type { ScriptRegistry } from '../../redis/scripts.js';
import { whenReady } from '../../redis/connection.js';
import { cancelRefusal } from '../admin/job-routes.js';
import { cancelResponseSchema } from '../admin/schemas.js';
import type { AppDeps } from '../deps.js';
import type { QueueThrottles } from '../queue-throttles.js';
import { tenantAuth, tenantOf } from '../tenant-auth.js';

export function jobCancelRoute(deps: AppDeps, throttles: QueueThrottles, scripts: ScriptRegistry): Router {
  const router = Router();
  router.delete('/v1/queues/:queue/jobs/:id', tenantAuth(deps), async (req: Request, res: Response) => {
    const tenant = tenantOf(res);
    const queueName = String(req.params.queue);
    const queue = deps.rules.current().queue(queueName);
    if (!queue) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no queue '${queueName}'`);
    const id = String(req.params.id);
    await whenReady(deps.sluice.redis, 2_000);
    const result = await cancelJob(scripts, deps.sluice.redis, throttles.of(queue), id, tenant?.name);
    if (!result.cancelled) throw cancelRefusal(queue.name, id, result);
    res.json(cancelResponseSchema.parse({ id, queue: queue.name, cancelled: true, freedUnits: result.freedUnits, previousState: result.previousState }));
  });
  return router;
}
