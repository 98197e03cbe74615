// Waiting for a job to finish: subscribe to its events first, then read its status, then sleep until
// one of its final events (or a backstop timer) says to read again. Subscribing before the first read
// means a job finishing in between is never missed.
import type { JobStatus } from './job-status.js';
import { isFinal, type JobEventStream } from './events.js';

/** How often the status is read again without an event: bounds the delay a lost event causes. */
export const WAIT_BACKSTOP_MS = 5_000;

interface Waitable {
  readonly events: JobEventStream;
  job(jobId: string, options?: { tenant?: string }): Promise<JobStatus | null>;
}

const finished = (status: JobStatus | null) => status === null || status.state === 'completed' || status.state === 'failed';

export async function waitForJob(throttle: Waitable, jobId: string, options: { timeoutMs: number; tenant?: string; signal?: AbortSignal }): Promise<JobStatus | null> {
  const tenant = options.tenant !== undefined ? { tenant: options.tenant } : {};
  const deadline = Date.now() + Math.max(0, options.timeoutMs);
  let wake: (() => void) | undefined;
  let signalled = false;
  const unsubscribe = await throttle.events.subscribe(
    (event) => {
      if (!isFinal(event)) return;
      signalled = true;
      wake?.();
    },
    { jobId },
  );
  const onAbort = () => wake?.();
  options.signal?.addEventListener('abort', onAbort);
  try {
    for (;;) {
      signalled = false;
      const status = await throttle.job(jobId, tenant);
      // A failed status with attempts left is between two runs: BullMQ reports it 'delayed' or 'waiting', not failed.
      if (finished(status)) return status;
      const left = deadline - Date.now();
      if (left <= 0 || options.signal?.aborted) return status;
      if (!signalled) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.min(left, WAIT_BACKSTOP_MS));
          function done() {
            clearTimeout(timer);
            resolve();
          }
          wake = done;
        });
        wake = undefined;
      }
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    unsubscribe();
  }
}
