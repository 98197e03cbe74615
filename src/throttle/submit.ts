// A submit's own parts, apart from the throttle that routes and sends it (throttle.ts): what a caller
// passes and gets back, the texts of the job the admission parks in BullMQ's delayed set
// (lua/throttle-admit.lua writes it with the admission), and what an admission's reply becomes: the
// caller's result and what the observer (metrics) is told.
import type { IdentityOptions } from '../redis/keys.js';
import type { ThrottleContext } from './context.js';
import { PARK_MS } from './dispatcher.js';
import { EVENT_STREAM_MAXLEN } from './events.js';
import type { AdmitReply, Park } from './lane-scripts.js';
import type { QuotaConfig } from './quota.js';

export interface SubmitOptions extends IdentityOptions {
  /** Units of the lane's capacity and rate this job uses (integer >= 1, default 1). */
  cost?: number;
  /** Idempotency key: the same id submitted twice is admitted once; the second call returns the first job. */
  id?: string;
  /** Admit at this instant (epoch ms) instead of Redis TIME: tests and simulations. */
  nowMs?: number;
  /** The tenant the job belongs to (kept in the job; job(id, { tenant }) answers only to it). */
  tenant?: string;
  /** The plan whose lane settings apply (one of the config's plans; else the default plan). */
  plan?: string;
  /**
   * POST the job's outcome here (signed, retried) once it completed or failed for good. Not checked
   * against an allow-list here (the HTTP layer does that): only its addresses, at each delivery —
   * loopback, link-local and private ones are refused unless `callbackPrivateAllowed`.
   */
  callbackUrl?: string;
  callbackPrivateAllowed?: boolean;
}

/** A spend quota as a refusal names it (SubmitResult's `quota`). @internal */
export type QuotaView = Pick<QuotaConfig, 'scope' | 'period' | 'unit' | 'limit' | 'timeZone'>;

export type SubmitResult =
  | {
      admitted: true;
      jobId: string;
      /** Predicted start, epoch ms (Redis time). */
      startsAtMs: number;
      /** Jobs ahead of this one in its lane. */
      position: number;
      /** True when this was a repeated idempotency key: the result describes the first job. */
      duplicate?: boolean;
    }
  | {
      admitted: false;
      /** `quota_exhausted`: a refusing spend quota's window is spoken for (see `quota`). */
      reason: 'queue_full' | 'wait_too_long' | 'quota_exhausted';
      /**
       * Exact ms until a submit of the same cost would be admitted, if the lane drains on schedule (a
       * quota: until its window resets).
       */
      retryAfterMs: number;
      /** The spend quota that refused (reason `quota_exhausted`). */
      quota?: Pick<QuotaConfig, 'scope' | 'period' | 'unit' | 'limit' | 'timeZone'>;
      capacity: number;
      /** Cost units the lane holds now: queued, or handed to a worker and not started yet. */
      queued: number;
    };

/**
 * The parked job's texts for the admission script: its data JSON around the predicted start (which
 * only the script knows), its options after its id (`optsTail`: the same for every job of a throttle),
 * and the head of its 'admitted' event.
 */
export function parkOf(name: string, laneId: string, cost: number, payloadText: string, plan: string | undefined, optsTail: string, options: SubmitOptions): Park {
  const laneJson = JSON.stringify(laneId);
  return {
    name,
    dataHead: `{"l":${laneJson},"c":${cost},"p":${payloadText}`,
    dataTail: dataTailOf(options.tenant, plan, options),
    optsTail,
    parkMs: PARK_MS,
    eventHead: options.tenant === undefined ? `{"lane":${laneJson}` : `{"lane":${laneJson},"tenant":${JSON.stringify(options.tenant)}`,
    eventMaxLen: EVENT_STREAM_MAXLEN,
  };
}

/**
 * The job data JSON after its predicted start: its tenant and plan (absent when none: old jobs and the
 * library without tenants), its callback; the closing brace. The fields of JobData, in its order.
 */
function dataTailOf(tenant: string | undefined, plan: string | undefined, options: SubmitOptions): string {
  let tail = '';
  if (tenant !== undefined) tail += `,"t":${JSON.stringify(tenant)}`;
  if (plan !== undefined) tail += `,"pl":${JSON.stringify(plan)}`;
  if (options.callbackUrl !== undefined) tail += `,"cb":${JSON.stringify(options.callbackUrl)}${options.callbackPrivateAllowed ? ',"cbp":1' : ''}`;
  return tail + '}';
}

/**
 * The caller's result of every reply but a duplicate whose job already left its lane (its start is read
 * from the job: the throttle does that).
 */
export function submitResultOf(reply: Exclude<AdmitReply, { kind: 'finished-duplicate' }>, jobId: string, capacity: number, quotaOf: (index: number) => QuotaView): SubmitResult {
  switch (reply.kind) {
    case 'queue_full':
    case 'wait_too_long':
    case 'quota_exhausted':
      return {
        admitted: false,
        reason: reply.kind,
        retryAfterMs: Math.ceil(reply.retryUs / 1000),
        capacity,
        queued: reply.depth,
        ...(reply.kind === 'quota_exhausted' ? { quota: quotaOf(reply.quota) } : {}),
      };
    case 'queued-duplicate':
      // Its job is there: the first submit wrote it with the admission (or this one did, when an older
      // version's submitter died between its admission and its enqueue).
      return { admitted: true, jobId, startsAtMs: Math.ceil(reply.startUs / 1000), position: reply.position, duplicate: true };
    case 'admitted':
      // The 'admitted' event was written by the script, before any worker could start the job.
      return { admitted: true, jobId, startsAtMs: Math.ceil(reply.startUs / 1000), position: reply.position };
  }
}

/** What a submit tells the observer (metrics): its outcome, wait, lane depth, a quota refusal. */
export function observeSubmit(observer: NonNullable<ThrottleContext['observer']>, queue: string, reply: AdmitReply, cost: number, quotaOf: (index: number) => QuotaView): void {
  observer.onSubmit?.({
    queue,
    outcome: reply.kind === 'admitted' ? 'admitted' : reply.kind === 'queued-duplicate' || reply.kind === 'finished-duplicate' ? 'duplicate' : reply.kind,
    cost,
    ...(reply.kind === 'admitted' ? { waitMs: (reply.startUs - reply.nowUs) / 1000 } : {}),
  });
  if (reply.kind === 'quota_exhausted') {
    const q = quotaOf(reply.quota);
    observer.onQuotaRefusal?.({ queue, scope: q.scope, period: q.period });
  }
  if (reply.kind === 'admitted') observer.onLaneDepth?.({ queue, depth: reply.position + 1 });
  else if (reply.kind === 'queue_full') observer.onLaneDepth?.({ queue, depth: reply.depth });
}
