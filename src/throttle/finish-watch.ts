// The backstop for a lost final event, shared by every waiter of one throttle in a process. Waiters
// (long-polls, SSE streams, waitForResult) are woken by their job's events; an event lost to a crash
// between a transition and its XADD (src/throttle/events.ts) would leave one waiting until its timeout.
// So every few seconds the jobs being waited on are looked at: one pipelined HMGET of two fields per job
// (finishedOn: set when a job finishes; timestamp: set on every job, so its absence says the job is gone),
// all of a throttle's jobs in one pipeline (they share its hash tag: one slot on a cluster). A job found
// finished or gone wakes its watchers, which read its whole status as usual. Each waiter reading its own
// job's whole status on a timer of its own cost 20,000 waiters 0.27-0.31 of a core and Redis 0.1; the
// look costs them 0.04-0.05 and 0.01 (docs/benchmarks.md, "Long-polls that wait";
// docs/decisions/finish-watch.md).
import type { Cluster, Redis } from 'ioredis';

/** How often the jobs being waited on are looked at: bounds the delay a lost final event causes (ms). */
export const FINISH_LOOK_MS = 5_000;
/** Jobs per pipeline: the replies of one pipeline are held at once. */
const LOOK_CHUNK = 1_000;

export class FinishWatch {
  private readonly watchers = new Map<string, Set<() => void>>();
  private timer: NodeJS.Timeout | undefined;
  private looking = false;

  /**
   * @param client the throttle's client (read when a look starts: it may be made later)
   * @param jobKey the BullMQ job hash of a job id
   */
  constructor(
    private readonly client: () => Redis | Cluster,
    private readonly jobKey: (jobId: string) => string,
    private readonly intervalMs = FINISH_LOOK_MS,
  ) {}

  /** Jobs being watched. */
  get size(): number {
    return this.watchers.size;
  }

  /**
   * Calls `wake` at each look that finds `jobId` finished or gone, until the returned function is called.
   * `wake` may be called for a job that is no longer finished when its status is read (an operator
   * retried it in between; BullMQ clears `finishedOn` then): the caller reads the status, and it decides.
   */
  watch(jobId: string, wake: () => void): () => void {
    let set = this.watchers.get(jobId);
    if (!set) {
      set = new Set();
      this.watchers.set(jobId, set);
    }
    set.add(wake);
    if (!this.timer) {
      this.timer = setInterval(() => void this.look(), this.intervalMs);
      this.timer.unref();
    }
    return () => {
      const s = this.watchers.get(jobId);
      if (!s?.delete(wake) || s.size > 0) return;
      this.watchers.delete(jobId);
      if (this.watchers.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
  }

  /** One look at every watched job (a look still running when the next is due is not doubled). */
  async look(): Promise<void> {
    if (this.looking || this.watchers.size === 0) return;
    this.looking = true;
    try {
      const ids = [...this.watchers.keys()];
      for (let i = 0; i < ids.length; i += LOOK_CHUNK) {
        const chunk = ids.slice(i, i + LOOK_CHUNK);
        const pipeline = this.client().pipeline();
        for (const id of chunk) pipeline.hmget(this.jobKey(id), 'finishedOn', 'timestamp');
        const replies = (await pipeline.exec()) ?? [];
        chunk.forEach((id, k) => {
          const [error, fields] = replies[k] ?? [null, undefined];
          if (error || !Array.isArray(fields)) return;
          const [finishedOn, timestamp] = fields as (string | null)[];
          if (finishedOn === null && timestamp !== null) return;
          for (const wake of [...(this.watchers.get(id) ?? [])]) wake();
        });
      }
    } catch {
      // Redis away: the next look tries again (the waiters' own timeouts still hold).
    } finally {
      this.looking = false;
    }
  }

  /** Stops looking (the throttle is closing); watchers are dropped. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.watchers.clear();
  }
}
