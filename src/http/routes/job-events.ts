// GET /v1/queues/:queue/jobs/:id/events — a job's transitions as Server-Sent Events: first a `state`
// event (the job as GET .../jobs/:id shows it, predicted start included), then one event per
// transition (admitted, started, deferred, progress, completed, failed, cancelled), and a last `state`
// once it is finished, after which the stream ends. Another tenant's job is a 404, as for its status.
// A client that does not read costs a bounded amount of memory: its progress events are coalesced
// while its socket is full, and it is dropped when its backlog passes SSE_MAX_BUFFER_BYTES or its
// socket has taken nothing for sseStallMs.
import { Router, type Request, type Response } from 'express';
import type { AppDeps } from '../deps.js';
import { markRedisAnswered } from '../redis-outage-log.js';
import { SluiceError } from '../../errors.js';
import type { QueueThrottles } from '../queue-throttles.js';
import { tenantAuth, tenantOf } from '../tenant-auth.js';
import { jobView } from '../live/job-view.js';
import type { LiveWaits } from '../live/live-waits.js';
import { isFinal, type JobEvent } from '../../throttle/events.js';

/** Events (bytes) a stream may hold for a client whose socket takes no more before it is disconnected. */
export const SSE_MAX_BUFFER_BYTES = 64 * 1024;
/** How long a client's socket may take nothing before it is disconnected (default; AppDeps.sseStallMs). */
export const SSE_STALL_MS = 30_000;
/** A comment line this often keeps proxies from closing an idle stream. */
export const SSE_HEARTBEAT_MS = 15_000;

export function jobEventsRoute(deps: AppDeps, throttles: QueueThrottles, waits: LiveWaits): Router {
  const router = Router();
  const stallMs = deps.sseStallMs ?? SSE_STALL_MS;
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
    let unwatch: (() => void) | undefined;
    const end = () => {
      if (ended) return;
      ended = true;
      clearInterval(heartbeat);
      unwatch?.();
      unsubscribe();
      open.close();
      if (!res.writableEnded) res.end();
    };
    res.once('close', end);
    open.signal.addEventListener('abort', end);
    // Backpressure: while the socket does not take more (write returned false, no 'drain' yet), events
    // wait in `pending`, where a newer progress replaces the older one (progress is a state: only the
    // latest matters). What waits is thus a handful of transitions and one progress; past
    // SSE_MAX_BUFFER_BYTES, or stalled longer than stallMs, the client is not reading, and goes.
    let blockedSince: number | undefined;
    let pending: { text: string; progress: boolean }[] = [];
    let pendingBytes = 0;
    const drop = () => {
      if (ended) return;
      deps.metrics.onEventStreamDropped();
      // The socket itself: ending the response would only queue its last chunk behind the unread data.
      ended = true;
      clearInterval(heartbeat);
      unwatch?.();
      unsubscribe();
      open.close();
      res.destroy();
    };
    const write = (text: string, progress = false) => {
      if (ended) return;
      if (blockedSince === undefined) {
        if (!res.write(text)) blockedSince = Date.now();
        return;
      }
      if (progress) {
        const old = pending.findIndex((p) => p.progress);
        if (old >= 0) pendingBytes -= pending.splice(old, 1)[0]!.text.length;
      }
      pending.push({ text, progress });
      pendingBytes += text.length;
      if (pendingBytes > SSE_MAX_BUFFER_BYTES) drop();
    };
    res.on('drain', () => {
      blockedSince = undefined;
      const queued = pending;
      pending = [];
      pendingBytes = 0;
      for (const p of queued) write(p.text, p.progress);
      if (finished && blockedSince === undefined) end();
    });
    const send = (event: string, data: unknown, eventId?: string) =>
      write(`${eventId ? `id: ${eventId}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`, event === 'progress');
    const sendState = (s: NonNullable<typeof status>) => send('state', jobView(queue.name, s));
    // A final event: its status is read once more (result, finish time) and the stream ends.
    let finishing = false;
    let finished = false;
    const finish = () => {
      if (finishing) return;
      finishing = true;
      throttle
        .job(id, owner)
        .then(
          (s) => (s ? sendState(s) : undefined),
          () => undefined,
        )
        .finally(() => {
          finished = true;
          // What still waits for the socket goes first (the drain handler ends the stream after it).
          if (blockedSince === undefined) end();
        });
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
    // The backstop for a lost final event (a worker that died between its transition and its XADD): the
    // throttle's periodic look at the jobs being waited on (src/throttle/finish-watch.ts) says when this
    // one looks finished or gone, and its status decides.
    unwatch = throttle.watchFinish(id, () => {
      throttle.job(id, owner).then(
        (s) => (!s || s.state === 'completed' || s.state === 'failed') && finish(),
        () => undefined,
      );
    });
    if (ended) unwatch();
    heartbeat = setInterval(() => {
      if (blockedSince !== undefined) {
        if (Date.now() - blockedSince > stallMs) drop();
        return;
      }
      write(': keep-alive\n\n');
    }, Math.min(SSE_HEARTBEAT_MS, stallMs));
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
