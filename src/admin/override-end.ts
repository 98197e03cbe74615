// An override that ends by itself (`until`): removed, and its lane paced by its plan again at once.
// Its queued work was paced by the override until then, and an admission after the end paces the lane
// by the plan; without this, a lane with a backlog and no new admission went on at the override's
// rate past its end. Run by the first process whose control cache sees the end, or by the admin API's
// listing of the overrides when it sees the end first (any may; one removes).
import type { RedisClient } from '../redis/connection.js';
import type { Throttle } from '../throttle/throttle.js';
import type { AuditLog } from './audit.js';
import type { ControlStore } from './control-store.js';
import { applyOverride } from './lanes.js';

/** True when `lane`'s override had ended and was removed here (then its lane is paced by its plan). */
export async function endTimedOverride(redis: RedisClient, throttle: Throttle, store: ControlStore, audit: AuditLog, lane: string, nowMs = Date.now()): Promise<boolean> {
  const removed = await store.endOverride(throttle.keys, lane, nowMs);
  if (!removed) return false;
  await applyOverride(redis, throttle, lane, undefined, removed.version);
  const untilMs = removed.ended?.untilMs;
  const until = untilMs !== undefined ? new Date(untilMs).toISOString() : undefined;
  const reason = removed.ended ? 'the override ended' : 'the stored override could not be read';
  await audit.record({ who: 'sluice', token: '', action: 'override.remove', queue: throttle.name, target: lane, details: { reason, ...(until ? { until } : {}) } });
  return true;
}
