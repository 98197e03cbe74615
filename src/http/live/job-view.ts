// A job as the tenant routes show it (GET .../jobs/:id, and the SSE stream's `state` events).
import type { JobStatus } from '../../throttle/job-status.js';
import type { QuotaUse } from '../../throttle/quota.js';

const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** A spend quota's use as the HTTP API shows it (lane detail and job status). */
export function quotaView(q: QuotaUse): { scope: QuotaUse['scope']; period: QuotaUse['period']; unit: QuotaUse['unit']; limit: number; used: number; resetsAt: string; timeZone: string } {
  return { scope: q.scope, period: q.period, unit: q.unit, limit: q.limit, used: q.used, resetsAt: new Date(q.resetsAtMs).toISOString(), timeZone: q.timeZone };
}

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
    ...(status.quotas ? { quotas: status.quotas.map(quotaView) } : {}),
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
