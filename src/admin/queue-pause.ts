// Pausing a whole queue: BullMQ's own queue pause (every worker stops taking its jobs at once), with
// the flags every process reads; a pause with an end is resumed by the first process to see it pass.
import type { Throttle } from '../throttle/throttle.js';
import type { AuditLog } from './audit.js';
import type { ControlStore } from './control-store.js';

export async function pauseQueue(throttle: Throttle, store: ControlStore, untilMs: number | undefined): Promise<void> {
  // Every shard's queue (a sharded throttle's dispatchers read their own queue's pause).
  await Promise.all(throttle.shards.map(async (t) => (await t.bullQueue()).pause()));
  await store.setPause(throttle.keys, untilMs);
}

export async function resumeQueue(throttle: Throttle, store: ControlStore): Promise<boolean> {
  await Promise.all(throttle.shards.map(async (t) => (await t.bullQueue()).resume()));
  return store.clearPause(throttle.keys);
}

/** Resumes `throttle`'s queue when its timed pause has ended; only the process that clears the flags records it. */
export async function endTimedPause(throttle: Throttle, store: ControlStore, audit: AuditLog, nowMs = Date.now()): Promise<boolean> {
  const c = await store.control(throttle.keys);
  if (!c.paused || c.pauseUntilMs === undefined || c.pauseUntilMs > nowMs) return false;
  if (!(await resumeQueue(throttle, store))) return false;
  await audit.record({ who: 'sluice', token: '', action: 'queue.resume', queue: throttle.name, details: { reason: 'the pause ended', until: new Date(c.pauseUntilMs).toISOString() } });
  return true;
}
