// What a soak run records as it goes: every submit and its answer, every pause, the worker kill, and
// the handler starts the worker processes report. Instants are wall-clock ms (performance.timeOrigin +
// performance.now()), the clock the worker processes report their starts on.
import type { StartEvent } from '../throttle-procs.js';

export type { StartEvent };

/** Progress lines (stderr). */
export type Log = (message: string) => void;

export const wallMs = (): number => performance.timeOrigin + performance.now();

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What a job's payload asks of its handler (test/helpers/throttle-proc.ts): throw `failTimes` times, defer once. */
export interface JobPayload {
  n: number;
  failTimes?: number;
  deferMs?: number;
}

export interface SubmitRecord {
  seq: number;
  key: string;
  lane: string;
  cost: number;
  payload: JobPayload;
  /** `load`: the offered load; `follow-up`: a refused submit sent again at its retryAfterMs; `capacity`: the capacity check after the drain. */
  phase: 'load' | 'follow-up' | 'capacity';
  /** The job id its idempotency id gives: a submit that threw may have made its job all the same. */
  jobId: string;
  sentAt: number;
  answeredAt?: number;
  admitted?: boolean;
  duplicate?: boolean;
  reason?: string;
  retryAfterMs?: number;
  /** Units the lane held, as the refusal said. */
  queued?: number;
  error?: string;
}

export interface PauseRecord {
  lane: string;
  scope: 'lane' | 'global';
  ms: number;
  sentAt: number;
  answeredAt: number;
  /** When the pause ends (Redis time, ms). */
  resumeAt: number;
}

export interface KillRecord {
  pid: number;
  at: number;
  replacementPid?: number;
}

/** A job transition from the throttle's event stream (admitted, started, deferred, completed, failed). */
export interface JobEventRecord {
  type: string;
  jobId: string;
  /** A deferral's reason: `rate` (sent back to its lane for a later start) or `upstream` (DeferJob). */
  reason?: string;
}

/** Everything the load phase left to check. */
export interface RunRecord {
  /** The run's origin: examples give instants as ms since it. */
  t0: number;
  submits: SubmitRecord[];
  pauses: PauseRecord[];
  kill?: KillRecord;
  starts: StartEvent[];
  events: JobEventRecord[];
}

/** An instant as ms since the run's origin, to 0.1 ms: what examples show. */
export function since(t0: number, at: number): number {
  return Math.round((at - t0) * 10) / 10;
}

/** Starts as examples show them. */
export function startsView(t0: number, starts: readonly StartEvent[]): object[] {
  return starts.map((s) => ({ id: s.id, lane: s.lane, cost: s.cost, t: since(t0, s.t), slot: since(t0, s.slot), attempt: s.attempt, pid: s.pid }));
}

/** Groups `items` by `keyOf`, in their order. */
export function groupBy<T>(items: Iterable<T>, keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    let group = groups.get(key);
    if (!group) groups.set(key, (group = []));
    group.push(item);
  }
  return groups;
}
