// Events a throttle reports (metrics and logs plug in here). Handlers must be cheap and never throw.

export type SubmitOutcome = 'admitted' | 'duplicate' | 'queue_full' | 'wait_too_long';

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
  /** Lane repair removed members whose job was lost. */
  onRepair?(event: { queue: string; units: number }): void;
}
