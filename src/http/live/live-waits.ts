// The HTTP requests that stay open for a job (long-polls and SSE streams): counted in a gauge, and all
// ended at shutdown, so `server.close()` does not wait out a 30 s long-poll or an endless stream.
import type { Metrics } from '../../metrics/metrics.js';

export type WaitKind = 'long_poll' | 'sse';

export interface OpenWait {
  /** Aborted when the client goes away or the server shuts down. */
  readonly signal: AbortSignal;
  /** Ends the wait's accounting (idempotent). */
  close(): void;
}

export class LiveWaits {
  private readonly open = new Set<AbortController>();

  constructor(private readonly metrics?: Metrics) {}

  get size(): number {
    return this.open.size;
  }

  start(kind: WaitKind): OpenWait {
    const controller = new AbortController();
    this.open.add(controller);
    this.metrics?.onWaitOpened(kind);
    let closed = false;
    return {
      signal: controller.signal,
      close: () => {
        if (closed) return;
        closed = true;
        this.open.delete(controller);
        this.metrics?.onWaitClosed(kind);
      },
    };
  }

  /** Shutdown: every long-poll answers now (with the job as it is) and every stream ends. */
  abortAll(): void {
    for (const controller of this.open) controller.abort();
  }
}
