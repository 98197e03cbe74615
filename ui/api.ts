// The admin API as the dashboard calls it: same-origin fetches carrying the session cookie, and on
// every change the X-Sluice-UI header the server requires of cookie-authorized changes (CSRF). The
// answers' types come from the server's zod schemas (type-only imports: nothing of zod is bundled).
import type { z } from 'zod';
import type * as s from '../src/http/admin/schemas.js';

export type Queues = z.output<typeof s.queuesResponseSchema>;
export type QueueOverview = Queues['queues'][number];
export type LanePage = z.output<typeof s.lanePageResponseSchema>;
export type LaneDetail = z.output<typeof s.laneDetailResponseSchema>;
export type FailedJobs = z.output<typeof s.failedJobsResponseSchema>;
export type LaneId = z.output<typeof s.laneIdResponseSchema>;
export type Retried = z.output<typeof s.retryResponseSchema>;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export const enc = encodeURIComponent;

export async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  if (method !== 'GET') {
    headers['X-Sluice-UI'] = '1';
    // The audit stream names the dashboard as the actor of its changes.
    headers['X-Sluice-Actor'] = 'dashboard';
  }
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, credentials: 'same-origin', ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
  const text = await res.text();
  let json: { message?: string } | undefined;
  try {
    json = text ? (JSON.parse(text) as { message?: string }) : undefined;
  } catch {
    json = undefined;
  }
  // The session ended (expired, or the admin token changed): back to the login form.
  if (res.status === 401) window.location.assign('/ui');
  if (!res.ok) throw new ApiError(res.status, json?.message ?? `${res.status} ${res.statusText}`);
  return json as T;
}
