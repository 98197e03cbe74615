// Lane repair: an admission without its job whose caller died (a schedule() call, an operator's retry;
// or an older sluice's submit, which enqueued in a second step: a submit now writes its job with its
// unit) leaves a queued member with no job behind it, which would hold a unit of the lane's capacity
// forever. Such an admission is indexed in the throttle's pending set with the instant by which its job must exist; workers read only the
// entries that came due, so a lost unit is freed a few seconds after its submitter gave up, however
// many lanes there are. A slow walk over the busy lanes stays as a backstop (members admitted by an
// older version, or whose pending entry was lost). And a dispatched job that no worker took within
// STALE_DISPATCH_MS (its round met the job while a worker was parking it, so could not move it to the
// wait list, or its worker died before putting it back) is handed to the workers again; the worker
// finds no start for it and queues it again at the head of its lane.
import type { Cluster, Redis } from 'ioredis';
import type { LaneScripts } from './lane-scripts.js';
import type { ThrottleKeys } from './keys.js';

/** Pending entries looked at per pass. */
const PENDING_PER_PASS = 500;
/** A dispatched job not taken by a worker this long after its start is looked after (ms). */
export const STALE_DISPATCH_MS = 10_000;

export class LaneRepairer {
  private rank = 0;
  private lastScan = Date.now();

  constructor(
    private readonly client: Redis | Cluster,
    private readonly keys: ThrottleKeys,
    private readonly lanes: LaneScripts,
    /** Busy-lane walk: members overdue by more than this are checked (ms). */
    private readonly overdueMs: number,
    /** Hands a parked job to the workers (BullMQ promote). */
    private readonly promote: (jobId: string) => Promise<void>,
    /** Busy-lane walk: at most this often (ms). */
    private readonly scanIntervalMs = 30_000,
    /** Lanes looked at per walk. */
    private readonly lanesPerPass = 100,
  ) {}

  /** One pass: the pending admissions that came due, and now and then the next busy lanes; returns the units removed. */
  async pass(): Promise<number> {
    const [seconds, micros] = await this.client.time();
    const nowUs = Number(seconds) * 1e6 + Number(micros);
    let removed = await this.pendingPass(nowUs);
    await this.staleDispatchPass(nowUs);
    if (Date.now() - this.lastScan >= this.scanIntervalMs) {
      this.lastScan = Date.now();
      removed += await this.lanePass(nowUs);
    }
    return removed;
  }

  /** Admissions whose job should exist by now: done (job there) or lost (unit freed); either way unindexed. */
  private async pendingPass(nowUs: number): Promise<number> {
    const due = await this.client.zrangebyscore(this.keys.pending, '-inf', String(nowUs), 'LIMIT', 0, PENDING_PER_PASS);
    if (due.length === 0) return 0;
    const entries = due.map((entry) => {
      const jobEnd = entry.indexOf('|');
      const costEnd = entry.indexOf('|', jobEnd + 1);
      return { entry, jobId: entry.slice(0, jobEnd), member: entry.slice(0, costEnd), laneId: entry.slice(costEnd + 1) };
    });
    const exists = await Promise.all(entries.map((e) => this.client.exists(this.keys.job(e.jobId))));
    const lost = new Map<string, string[]>();
    entries.forEach((e, i) => {
      if (exists[i] === 0) lost.set(e.laneId, [...(lost.get(e.laneId) ?? []), e.member]);
    });
    let removed = 0;
    // The script checks each job again: one enqueued since is left alone.
    for (const [laneId, members] of lost) removed += await this.lanes.repair(laneId, members);
    await this.client.zrem(this.keys.pending, ...due);
    return removed;
  }

  /** Dispatched entries no worker took: removed (by one process only) and their jobs promoted again. */
  private async staleDispatchPass(nowUs: number): Promise<void> {
    const stale = await this.client.zrangebyscore(this.keys.dispatched, '-inf', String(nowUs - STALE_DISPATCH_MS * 1000), 'LIMIT', 0, PENDING_PER_PASS);
    await Promise.all(
      stale.map(async (entry) => {
        if ((await this.client.zrem(this.keys.dispatched, entry)) !== 1) return;
        // Not in the delayed set (waiting for a worker, running, or gone): nothing to bring back.
        await this.promote(entry.slice(0, entry.indexOf('|'))).catch(() => undefined);
      }),
    );
  }

  /** The backstop: the next `lanesPerPass` busy lanes, members long overdue whose job is missing. */
  private async lanePass(nowUs: number): Promise<number> {
    const cutoffUs = nowUs - this.overdueMs * 1000;
    const laneIds = await this.client.zrange(this.keys.busy, String(this.rank), String(this.rank + this.lanesPerPass - 1));
    this.rank = laneIds.length < this.lanesPerPass ? 0 : this.rank + laneIds.length;
    let removed = 0;
    for (const laneId of laneIds) {
      const overdue = await this.client.zrangebyscore(this.keys.laneQueue(laneId), '-inf', String(cutoffUs), 'LIMIT', 0, 200);
      if (overdue.length === 0) continue;
      const exists = await Promise.all(overdue.map((m) => this.client.exists(this.keys.job(m.slice(0, m.lastIndexOf('|'))))));
      const missing = overdue.filter((_, i) => exists[i] === 0);
      if (missing.length) removed += await this.lanes.repair(laneId, missing);
    }
    return removed;
  }
}
