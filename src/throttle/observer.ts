// Events a throttle reports (metrics and logs plug in here). Handlers must be cheap and never throw.

import type { IgnoreReason } from '../upstream/index.js';

export type { IgnoreReason };

/** How a report of an upstream's answer was read. */
export type UpstreamEvent = 'budget' | 'throttled' | 'ok' | 'ignored';

export type SubmitOutcome = 'admitted' | 'duplicate' | 'queue_full' | 'wait_too_long' | 'quota_exhausted';

export interface ThrottleObserver {
  /** A submit was decided. `waitMs` is the predicted wait of an admitted job. */
  onSubmit?(event: { queue: string; outcome: SubmitOutcome; cost: number; waitMs?: number }): void;
  /** A job started: `queuedMs` from admission to its slot, `lateMs` past its slot in this process (timer jitter). */
  onStart?(event: { queue: string; queuedMs: number; lateMs: number; retry: boolean }): void;
  /** The gate sent a job back to wait for its slot (no attempt used). */
  onDefer?(event: { queue: string; reason: 'rate' | 'upstream' }): void;
  /** A handler run ended. */
  onFinish?(event: { queue: string; outcome: 'completed' | 'failed' | 'retrying'; durationMs: number }): void;
  /** The lane a submit went to: its queued jobs after an admission, its queued units at a refusal. */
  onLaneDepth?(event: { queue: string; depth: number }): void;
  /**
   * A handler reported an upstream's answer (`job.upstream`): read as a budget, a 429 without one, a
   * plain success, or ignored (learning off, or not recorded); `ignored` lists header values not used.
   */
  onUpstream?(event: { queue: string; event: UpstreamEvent; ignored: readonly { header: string; reason: IgnoreReason }[] }): void;
  /**
   * A job's actual cost (reported with `job.upstream({ cost })`) differed from the cost it was admitted
   * with: `units` were charged (more) or refunded (less) to its lane's and the queue's meters.
   */
  onReconcile?(event: { queue: string; direction: 'charge' | 'refund'; units: number }): void;
  /** A submit was refused by a spend quota (its window was spoken for). */
  onQuotaRefusal?(event: { queue: string; scope: 'key' | 'queue'; period: 'day' | 'month' }): void;
  /** BullMQ's worker reported an error: a lost connection, or a call Redis refused that it will not retry (a job's completion, say). */
  onWorkerError?(event: { queue: string }): void;
  /** Lane repair removed members whose job was lost. */
  onRepair?(event: { queue: string; units: number }): void;
}
