// A job as the tenant routes show it (GET .../jobs/:id, and the SSE stream's `state` events).
import type { JobStatus } from '../../throttle/job-status.js';

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

export function jobView(queue: string, status: JobStatus): Record<string, unknown> {
  return {
    id: status.id,
    queue,
    state: status.state,
    attemptsMade: status.attemptsMade,
    startsAt: iso(status.startsAtMs),
    submittedAt: iso(status.submittedAtMs),
    startedAt: iso(status.startedAtMs),
    finishedAt: iso(status.finishedAtMs),
    ...(status.state === 'completed' ? { result: status.result ?? null } : {}),
    ...(status.failedReason ? { failedReason: status.failedReason } : {}),
    ...(status.progress !== undefined ? { progress: status.progress } : {}),
    ...(status.callback
      ? {
          callback: {
            url: status.callback.url,
            delivered: status.callback.delivered,
            attempts: status.callback.attempts.map((a) => ({
              at: new Date(a.atMs).toISOString(),
              delivered: a.delivered,
              ...(a.status !== undefined ? { status: a.status } : {}),
              ...(a.error !== undefined ? { error: a.error } : {}),
              durationMs: a.durationMs,
            })),
          },
        }
      : {}),
  };
}
