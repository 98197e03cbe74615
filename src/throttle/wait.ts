// Waiting for a job to finish: subscribe to its events first, then read its status, then sleep until
// one of its final events says to read again, or the throttle's look at the jobs being waited on finds
// it finished or gone (the backstop for a lost event: src/throttle/finish-watch.ts). Subscribing before
// the first read means a job finishing in between is never missed.
import type { JobStatus } from './job-status.js';
import { isFinal, type JobEventStream } from './events.js';

interface Waitable {
  readonly events: JobEventStream;
  job(jobId: string, options?: { tenant?: string }): Promise<JobStatus | null>;
  /** Calls `wake` whenever a look finds `jobId` finished or gone, until the returned function is called. */
  watchFinish(jobId: string, wake: () => void): () => void;
}

const finished = (status: JobStatus | null) => status === null || status.state === 'completed' || status.state === 'failed';

export async function waitForJob(throttle: Waitable, jobId: string, options: { timeoutMs: number; tenant?: string; signal?: AbortSignal }): Promise<JobStatus | null> {
  const tenant = options.tenant !== undefined ? { tenant: options.tenant } : {};
  const deadline = Date.now() + Math.max(0, options.timeoutMs);
  let wake: (() => void) | undefined;
  let signalled = false;
  // A final event, or the look finding the job finished or gone: read the status again.
  const readAgain = () => {
    signalled = true;
    wake?.();
  };
  const unsubscribe = await throttle.events.subscribe((event) => isFinal(event) && readAgain(), { jobId });
  const onAbort = () => wake?.();
  options.signal?.addEventListener('abort', onAbort);
  const unwatch = throttle.watchFinish(jobId, readAgain);
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
          const timer = setTimeout(done, left);
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
    unwatch();
    unsubscribe();
  }
}
