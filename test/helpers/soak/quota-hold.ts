// Lanes held by their key quota (docs/algorithms.md, "Spend quotas"): a key quota's retries and
// deferrals spend its window again, so a lane may have admitted more than the window then has room
// for; those jobs wait for the next window. Such a lane is busy, in the waiting set at its window's
// reset, and says so: lane().nextStartAtMs is that reset.
import type { Throttle } from '../../../src/index.js';
import type { Findings } from './findings.js';
import type { StartEvent } from './records.js';
import type { RawRedis } from './target.js';

export interface QuotaHold {
  lane: string;
  /** The window's reset, epoch ms. */
  resetAtMs: number;
  unit: 'calls' | 'cost';
  used: number;
  limit: number;
  /** The job ids in the lane's queue. */
  queuedIds: string[];
  /** lane().nextStartAtMs: must be the reset. */
  nextStartAtMs: number;
}

/**
 * The busy lanes held by a key quota: in the waiting set at exactly the quota window's end (the
 * dispatch script's score for a lane whose quota has no room). None without a key quota.
 */
export async function quotaHolds(throttle: Throttle, raw: RawRedis): Promise<Map<string, QuotaHold>> {
  const holds = new Map<string, QuotaHold>();
  if (!throttle.config.quotas?.some((q) => q.scope === 'key')) return holds;
  for (const shard of throttle.shards) {
    for (const [lane, hold] of await shardHolds(throttle, shard, raw)) holds.set(lane, hold);
  }
  return holds;
}

async function shardHolds(throttle: Throttle, shard: Throttle, raw: RawRedis): Promise<Map<string, QuotaHold>> {
  const holds = new Map<string, QuotaHold>();
  for (const lane of await raw.zrange(shard.keys.busy, '0', '-1')) {
    const waitingUs = await raw.zscore(shard.keys.waiting, lane);
    const use = (await throttle.quotaUse(lane)).find((q) => q.scope === 'key');
    if (waitingUs === null || !use || Number(waitingUs) !== use.resetsAtMs * 1000) continue;
    const members = await raw.zrange(shard.keys.laneQueue(lane), '0', '-1');
    // Lane ids of the soak's keys are the keys themselves (short and safe: stored verbatim).
    const { nextStartAtMs } = await throttle.lane(lane);
    holds.set(lane, { lane, resetAtMs: use.resetsAtMs, unit: use.unit, used: use.used, limit: use.limit, queuedIds: members.map((m) => m.slice(0, m.lastIndexOf('|'))), nextStartAtMs });
  }
  return holds;
}

/**
 * What a held lane must show: a window without room (for calls: used up), its next start at the reset,
 * and no more jobs waiting that never started than the window's calls beyond one per job explain.
 * Admission counts a window's calls plus the lane's queued jobs, so only a call made again (a retry, a
 * deferred call, a re-run) takes room a waiting job was admitted for; a dispatch lost with the killed
 * worker counts a call that was not made (quotas err on the side of the limit), so each of the lane's
 * jobs the kill touched may explain one more.
 */
export function checkQuotaHolds(holds: ReadonlyMap<string, QuotaHold>, starts: readonly StartEvent[], touchedByKill: ReadonlySet<string>, findings: Findings): void {
  for (const hold of holds.values()) {
    const view = { lane: hold.lane, used: hold.used, limit: hold.limit, resetAt: new Date(hold.resetAtMs).toISOString(), nextStartAt: new Date(hold.nextStartAtMs).toISOString(), queued: hold.queuedIds.length };
    if (hold.unit === 'calls' && hold.used < hold.limit) findings.violation('quota-hold-with-room', 'a lane waits for its quota only when the window has no room for its head job', view);
    if (hold.nextStartAtMs !== hold.resetAtMs) findings.violation('quota-hold-next-start', "a lane held by its key quota says so: lane().nextStartAtMs is the window's reset", view);
    const laneStarts = starts.filter((s) => s.lane === hold.lane);
    const started = new Set(laneStarts.map((s) => s.id));
    const callsAgain = laneStarts.length - started.size;
    const neverStarted = hold.queuedIds.filter((id) => !started.has(id)).length;
    const killed = [...new Set([...started, ...hold.queuedIds])].filter((id) => touchedByKill.has(id)).length;
    if (hold.unit === 'calls' && neverStarted > callsAgain + killed) {
      findings.violation('quota-hold-unexplained', 'jobs admitted past a key quota wait for the reset only for calls made again (retries, deferrals)', { ...view, neverStarted, callsAgain, touchedByKill: killed });
    }
  }
}
