// Waits for the queue to drain once the submits stopped: nothing waiting, active, delayed or handed
// out, no busy lane, but the lanes a key quota holds until its reset, whose parked jobs stay (the
// quota scenario's documented wait).
import type { Throttle } from '../../../src/index.js';
import { quotaHolds, type QuotaHold } from './quota-hold.js';
import { sleep, wallMs } from './records.js';
import type { RawRedis } from './target.js';

export interface DrainResult {
  drained: boolean;
  /** From the end of the submits to the drain (or the deadline). */
  ms: number;
  /** BullMQ's job counts when it ended. */
  counts: Record<string, number>;
  busyLanes: number;
  dispatched: number;
  /** Lanes held by their key quota until its reset. */
  holds: Map<string, QuotaHold>;
}

const POLL_MS = 250;

export async function waitForDrain(throttle: Throttle, raw: RawRedis, submitsEndedAt: number, timeoutMs: number): Promise<DrainResult> {
  // A sharded throttle's jobs and sets are its shards': each counted, then summed.
  const queues = await Promise.all(throttle.shards.map((s) => s.bullQueue()));
  const sum = async (count: (shard: Throttle) => Promise<number>) => (await Promise.all(throttle.shards.map(count))).reduce((a, b) => a + b, 0);
  const deadline = wallMs() + timeoutMs;
  for (;;) {
    const counts: Record<string, number> = {};
    for (const queue of queues) {
      for (const [state, n] of Object.entries(await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'waiting-children'))) counts[state] = (counts[state] ?? 0) + n;
    }
    const busyLanes = await sum((s) => raw.zcard(s.keys.busy));
    const dispatched = await sum((s) => raw.zcard(s.keys.dispatched));
    const { delayed = 0, ...others } = counts;
    const moving = dispatched > 0 || Object.values(others).some((n) => n > 0);
    // Held lanes are looked for only once nothing else moves: each costs a few reads.
    const holds = !moving && busyLanes > 0 ? await quotaHolds(throttle, raw) : new Map<string, QuotaHold>();
    const parkedForReset = [...holds.values()].reduce((n, h) => n + h.queuedIds.length, 0);
    const drained = !moving && busyLanes === holds.size && delayed === parkedForReset;
    if (drained || wallMs() > deadline) return { drained, ms: Math.round(wallMs() - submitsEndedAt), counts, busyLanes, dispatched, holds };
    await sleep(POLL_MS);
  }
}
