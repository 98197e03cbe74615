// GET /v1/admin/stream: Server-Sent Events of every queue's live figures (the same overview as GET
// /v1/admin/queues) once a second, for the dashboard's live chart. One timer serves every open
// stream: the figures are read from Redis once per tick whatever the number of viewers, and only
// while someone watches.
//
// A client that does not read cannot grow the server's memory: a frame is not written to a stream
// whose socket still holds more than STREAM_BUFFER_BYTES unsent, and a stream that skipped
// STREAM_MAX_SKIPS frames in a row is closed (the browser's EventSource reconnects by itself).
import { Router, type Request, type Response } from 'express';
import { queuesResponseSchema } from './schemas.js';
import type { AdminContext } from './context.js';
import { queueOverviews } from './overview.js';

/** Figures are sent this often (ms). */
export const STREAM_INTERVAL_MS = 1_000;
/** Unsent bytes a stream may hold before its frames are skipped. */
export const STREAM_BUFFER_BYTES = 64 * 1024;
/** Frames skipped in a row before a stream that does not read is closed. */
export const STREAM_MAX_SKIPS = 30;

interface Client {
  res: Response;
  skips: number;
}

export class FigureStream {
  private readonly clients = new Set<Client>();
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private closed = false;
  /** Frames not written because a client's buffer was full (all clients, since the start). */
  skipped = 0;

  constructor(private readonly ctx: AdminContext, private readonly intervalMs = STREAM_INTERVAL_MS) {}

  get size(): number {
    return this.clients.size;
  }

  add(res: Response): void {
    if (this.closed) {
      // Shutting down: a reconnect must not open a stream that would hold the close up again.
      res.status(503).setHeader('Connection', 'close');
      res.end();
      return;
    }
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    res.write('retry: 2000\n\n');
    const client: Client = { res, skips: 0 };
    this.clients.add(client);
    res.once('close', () => this.remove(client));
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.intervalMs);
      this.timer.unref();
    }
    void this.tick();
  }

  /** Ends every stream (the server is shutting down: an open stream would hold it up). */
  closeAll(): void {
    this.closed = true;
    for (const c of [...this.clients]) {
      c.res.end();
      this.remove(c);
    }
  }

  private remove(client: Client): void {
    this.clients.delete(client);
    if (this.clients.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.clients.size === 0) return;
    this.ticking = true;
    let frame: string;
    try {
      const body = queuesResponseSchema.parse({ queues: await queueOverviews(this.ctx) });
      frame = `event: figures\nid: ${Date.now()}\ndata: ${JSON.stringify({ at: new Date().toISOString(), ...body })}\n\n`;
    } catch (error) {
      // Redis away: say so, and try again on the next tick.
      frame = `event: unavailable\ndata: ${JSON.stringify({ message: (error as Error).message })}\n\n`;
    } finally {
      this.ticking = false;
    }
    for (const c of [...this.clients]) {
      if (c.res.writableLength > STREAM_BUFFER_BYTES) {
        this.skipped += 1;
        c.skips += 1;
        if (c.skips >= STREAM_MAX_SKIPS) {
          c.res.destroy();
          this.remove(c);
        }
        continue;
      }
      c.skips = 0;
      c.res.write(frame);
    }
  }
}

export function streamRoutes(stream: FigureStream): Router {
  const router = Router();
  router.get('/v1/admin/stream', (_req: Request, res: Response) => {
    stream.add(res);
  });
  return router;
}
