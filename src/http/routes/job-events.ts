// GET /v1/queues/:queue/jobs/:id/events — a job's transitions as Server-Sent Events: first a `state`
// event (the job as GET .../jobs/:id shows it, predicted start included), then one event per
// transition (admitted, started, deferred, progress, completed, failed, cancelled), and a last `state`
// once it is finished, after which the stream ends. Another tenant's job is a 404, as for its status.
// A client that does not read is dropped once its unsent data passes SSE_MAX_BUFFER_BYTES, so a
// stalled reader costs the server a bounded amount of memory.
import { Router, type Request, type Response } from 'express';
import type { AppDeps } from '../deps.js';
import { markRedisAnswered } from '../redis-outage-log.js';
import { SluiceError } from '../../errors.js';
import type { QueueThrottles } from '../queue-throttles.js';
import { tenantAuth, tenantOf } from '../tenant-auth.js';
import { jobView } from '../live/job-view.js';
import type { LiveWaits } from '../live/live-waits.js';
import { isFinal, type JobEvent } from '../../throttle/events.js';

/** Unsent bytes a stream may hold for a slow client before it is disconnected. */
export const SSE_MAX_BUFFER_BYTES = 64 * 1024;
/** A comment line this often keeps proxies from closing an idle stream. */
export const SSE_HEARTBEAT_MS = 15_000;

export function jobEventsRoute(deps: AppDeps, throttles: QueueThrottles, waits: LiveWaits): Router {
  const router = Router();
  router.get('/v1/queues/:queue/jobs/:id/events', tenantAuth(deps), async (req: Request, res: Response) => {
    const tenant = tenantOf(res);
    const queueName = String(req.params.queue);
    const queue = deps.rules.current().queue(queueName);
    if (!queue) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no queue '${queueName}'`);
    const id = String(req.params.id);
    const throttle = throttles.of(queue);
    const owner = tenant ? { tenant: tenant.name } : {};

    // Subscribed before the first read: a transition between the read and the stream is not lost.
    const early: JobEvent[] = [];
    let onEvent: (event: JobEvent) => void = (event) => early.push(event);
    const unsubscribe = await throttle.events.subscribe((event) => onEvent(event), { jobId: id });
    let status;
    try {
      status = await throttle.job(id, owner);
    } catch (error) {
      unsubscribe();
      throw error;
    }
    markRedisAnswered(res);
    if (!status) {
      unsubscribe();
      throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no job '${id}' in queue '${queue.name}' (unknown, or removed after its retention)`);
    }

    const open = waits.start('sse');
    let ended = false;
    let heartbeat: NodeJS.Timeout | undefined;
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      unsubscribe();
      open.close();
      if (!res.writableEnded) res.end();
    };
    res.once('close', end);
    open.signal.addEventListener('abort', end);
    const write = (text: string) => {
      if (ended) return;
      res.write(text);
      // Node buffers what the socket does not take: past the bound the client is not reading, and goes.
      if (res.writableLength > SSE_MAX_BUFFER_BYTES) {
        deps.metrics.onEventStreamDropped();
        end();
        res.destroy();
      }
    };
    const send = (event: string, data: unknown, eventId?: string) => write(`${eventId ? `id: ${eventId}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    const sendState = (s: NonNullable<typeof status>) => send('state', jobView(queue.name, s));
    // A final event: its status is read once more (result, finish time) and the stream ends.
    let finishing = false;
    const finish = () => {
      if (finishing) return;
      finishing = true;
      throttle
        .job(id, owner)
        .then(
          (s) => (s ? sendState(s) : undefined),
          () => undefined,
        )
        .finally(end);
    };

    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-cache, no-transform');
    // nginx would otherwise buffer the stream.
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    // Reconnect after 3 s; the job's status and then its new events are sent again.
    write('retry: 3000\n\n');
    sendState(status);
    if (status.state === 'completed' || status.state === 'failed') {
      end();
      return;
    }
    onEvent = (event) => {
      send(event.type, eventView(queue.name, event), event.id);
      if (isFinal(event)) finish();
    };
    for (const event of early.splice(0)) onEvent(event);
    heartbeat = setInterval(() => {
      write(': keep-alive\n\n');
      // The backstop for a lost final event (a worker that died between its transition and its XADD).
      throttle.job(id, owner).then(
        (s) => (!s || s.state === 'completed' || s.state === 'failed') && finish(),
        () => undefined,
      );
    }, SSE_HEARTBEAT_MS);
    heartbeat.unref();
  });
  return router;
}

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** An event as the stream sends it: the lane and tenant are left out (the tenant knows both). */
function eventView(queue: string, e: JobEvent): Record<string, unknown> {
  return {
    type: e.type,
    id: e.jobId,
    queue,
    at: iso(e.atMs),
    ...(e.startsAtMs !== undefined ? { startsAt: iso(e.startsAtMs) } : {}),
    ...(e.position !== undefined ? { position: e.position } : {}),
    ...(e.attemptsMade !== undefined ? { attemptsMade: e.attemptsMade } : {}),
    ...(e.reason !== undefined ? { reason: e.reason } : {}),
    ...(e.delayMs !== undefined ? { delayMs: e.delayMs } : {}),
    ...(e.failedReason !== undefined ? { failedReason: e.failedReason } : {}),
    ...(e.retrying !== undefined ? { retrying: e.retrying } : {}),
    ...(e.progress !== undefined ? { progress: e.progress } : {}),
  };
}
