// GET /v1/queues/:queue/jobs/:id — a job's state, attempts, result or failure, and its start.
// Under authentication only the tenant that submitted it sees it: another tenant's job is a 404.
// `?wait=<seconds>` long-polls: the answer comes as soon as the job is finished (completed, failed for
// good) or the wait ends, whichever is first; waits above MAX_WAIT_SECONDS are clamped to it.
import { Router, type Request, type Response } from 'express';
import type { AppDeps } from '../deps.js';
import { markRedisAnswered } from '../redis-outage-log.js';
import { SluiceError } from '../../errors.js';
import type { QueueThrottles } from '../queue-throttles.js';
import { tenantAuth, tenantOf } from '../tenant-auth.js';
import { parsePart } from '../admin/context.js';
import { jobStatusQuerySchema } from '../schemas.js';
import { jobView } from '../live/job-view.js';
import type { LiveWaits } from '../live/live-waits.js';

/** The longest long-poll (s): a larger `wait` is clamped to it. Below common proxies' 60 s idle timeouts. */
export const MAX_WAIT_SECONDS = 30;

export function jobStatusRoute(deps: AppDeps, throttles: QueueThrottles, waits: LiveWaits): Router {
  const router = Router();
  router.get('/v1/queues/:queue/jobs/:id', tenantAuth(deps), async (req: Request, res: Response) => {
    const tenant = tenantOf(res);
    const queueName = String(req.params.queue);
    const queue = deps.rules.current().queue(queueName);
    if (!queue) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no queue '${queueName}'`);
    const { wait } = parsePart(jobStatusQuerySchema, req.query, 'query');
    const id = String(req.params.id);
    const throttle = throttles.of(queue);
    const owner = tenant ? { tenant: tenant.name } : {};
    let status = await throttle.job(id, owner);
    if (status && wait !== undefined && wait > 0 && status.state !== 'completed' && status.state !== 'failed') {
      const open = waits.start('long_poll');
      // Ended by the client going away, or by shutdown (open.signal): either way the wait stops.
      const gone = new AbortController();
      res.once('close', () => gone.abort());
      try {
        status = await throttle.waitForJob(id, { timeoutMs: Math.min(wait, MAX_WAIT_SECONDS) * 1000, ...owner, signal: AbortSignal.any([gone.signal, open.signal]) });
      } finally {
        open.close();
      }
    }
    markRedisAnswered(res);
    if (!status) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no job '${id}' in queue '${queue.name}' (unknown, or removed after its retention)`);
    res.json(jobView(queue.name, status));
  });
  return router;
}
