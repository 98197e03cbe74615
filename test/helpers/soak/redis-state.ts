// The throttle's Redis state once the queue drained (docs/algorithms.md, "Redis state"): its busy,
// waiting, ready, dispatched and pending sets empty (but the lanes a key quota holds), every lane's
// depth 0 and its units back (no handed-out unit still counted), every idle lane key expiring, BullMQ's
// lists empty. Lanes are read by their known ids, never by SCAN; a sharded throttle's sets and lists
// are read in each shard, and a lane in the shard that holds it.
import type { Throttle } from '../../../src/index.js';
import { quotaCounterSuffix, quotaWindows } from '../../../src/throttle/quota.js';
import type { Findings } from './findings.js';
import type { QuotaHold } from './quota-hold.js';
import type { RawRedis } from './target.js';

export interface RedisStateFigures {
  sets: Record<string, number>;
  lanesInspected: number;
  laneKeys: Record<string, number>;
  bull: { wait: number; active: number; delayed: number };
}

const SHARED_SETS = ['busy', 'waiting', 'ready', 'dispatched', 'pending'] as const;

/** Reads the state after the drain; `label` says which moment (it names the violations). */
export async function inspectRedisState(label: string, throttle: Throttle, raw: RawRedis, lanes: readonly string[], holds: ReadonlyMap<string, QuotaHold>, findings: Findings): Promise<RedisStateFigures> {
  const sets: Record<string, number> = {};
  for (const shard of throttle.shards) {
    for (const [set, n] of Object.entries(await checkSharedSets(label, shard, raw, holds, findings))) sets[set] = (sets[set] ?? 0) + n;
  }
  const laneKeys: Record<string, number> = {};
  for (const lane of lanes) {
    for (const kind of await checkLane(label, throttle.forLane(lane), raw, lane, holds.get(lane), findings)) laneKeys[kind] = (laneKeys[kind] ?? 0) + 1;
  }
  const bull = { wait: 0, active: 0, delayed: 0 };
  for (const shard of throttle.shards) {
    const prefix = shard.keys.jobPrefix;
    bull.wait += await raw.llen(`${prefix}wait`);
    bull.active += await raw.llen(`${prefix}active`);
    bull.delayed += await raw.zcard(`${prefix}delayed`);
  }
  const parkedForReset = [...holds.values()].reduce((n, h) => n + h.queuedIds.length, 0);
  if (bull.wait + bull.active > 0 || bull.delayed !== parkedForReset) findings.violation(`bull-not-empty(${label})`, "BullMQ holds nothing once the queue drained (but the jobs a key quota holds, parked)", { ...bull, parkedForReset });
  return { sets, lanesInspected: lanes.length, laneKeys, bull };
}

/** The throttle-wide sets: only held lanes may be busy (scored by their depth) and waiting (at their reset). */
async function checkSharedSets(label: string, throttle: Throttle, raw: RawRedis, holds: ReadonlyMap<string, QuotaHold>, findings: Findings): Promise<Record<string, number>> {
  const sizes: Record<string, number> = {};
  for (const set of SHARED_SETS) {
    const members = await raw.zrange(throttle.keys[set], '0', '-1', 'WITHSCORES');
    sizes[set] = members.length / 2;
    const unexpected: string[] = [];
    for (let i = 0; i < members.length; i += 2) {
      const hold = holds.get(members[i]!);
      const heldHere = hold && ((set === 'busy' && Number(members[i + 1]) > 0) || (set === 'waiting' && Number(members[i + 1]) === hold.resetAtMs * 1000));
      if (!heldHere) unexpected.push(members[i]!, members[i + 1]!);
    }
    if (unexpected.length > 0) findings.violation(`${set}-set-not-empty(${label})`, `the ${set} set is empty once the queue drained (but the lanes a key quota holds)`, { members: unexpected.slice(0, 20), count: unexpected.length / 2 });
  }
  return sizes;
}

/**
 * One lane, read in one MULTI with Redis's clock of that instant (a clock read once for the whole sweep
 * goes stale over hundreds of lanes). Returns the kinds of its keys that exist.
 */
async function checkLane(label: string, throttle: Throttle, raw: RawRedis, lane: string, hold: QuotaHold | undefined, findings: Findings): Promise<string[]> {
  const keys = throttle.keys;
  const quota = throttle.config.quotas?.findIndex((q) => q.scope === 'key') ?? -1;
  const counter = quota >= 0 ? keys.lane(lane) + quotaCounterSuffix(quota, quotaWindows(throttle.config.quotas![quota]!, Date.now()).startMs) : undefined;
  const kinds: Record<string, string> = { hash: keys.lane(lane), queue: keys.laneQueue(lane), outgoing: keys.laneOutgoing(lane), back: keys.laneBack(lane), ...(counter ? { quota: counter } : {}) };
  const multi = raw.multi().time().hgetall(keys.lane(lane)).zrange(keys.laneQueue(lane), '0', '-1').zrange(keys.laneOutgoing(lane), '0', '-1', 'WITHSCORES');
  for (const key of Object.values(kinds)) multi.pttl(key);
  const replies = (await multi.exec())!.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
  const [seconds, micros] = replies[0] as [string, string];
  const nowUs = Number(seconds) * 1e6 + Number(micros);
  const hash = replies[1] as Record<string, string>;
  const queue = replies[2] as string[];
  const outgoing = replies[3] as string[];
  const ttls = Object.fromEntries(Object.keys(kinds).map((kind, i) => [kind, replies[4 + i] as number]));
  const units = (members: string[]) => members.reduce((n, m) => n + Number(m.slice(m.lastIndexOf('|') + 1)), 0);
  const depth = Number(hash.d ?? 0);

  if (hold) {
    if (depth !== units(queue)) findings.violation(`lane-depth-not-its-queue(${label})`, "a lane's depth is its queued units", { lane, depth, queuedUnits: units(queue) });
  } else {
    if (depth !== 0) findings.violation(`lane-depth-nonzero(${label})`, "a lane's depth is 0 once its jobs started", { lane, hash });
    if (queue.length > 0) findings.violation(`lane-queue-left(${label})`, "a lane's queue is empty once its jobs started", { lane, members: queue.slice(0, 10) });
  }
  // Handed-out units still counted: od less the members whose start is past (od is settled lazily, at
  // the next admission), unless the outgoing set outlived its last start (oe: all of od has started).
  const handedOut = Number(hash.od ?? 0);
  if (handedOut > 0 && !(hash.oe && nowUs >= Number(hash.oe))) {
    const past = units(outgoing.filter((_, i) => i % 2 === 0 && Number(outgoing[i + 1]) <= nowUs));
    const ahead = units(outgoing.filter((_, i) => i % 2 === 0 && Number(outgoing[i + 1]) > nowUs));
    if (handedOut - past > 0 || ahead > 0) findings.violation(`lane-units-still-out(${label})`, 'a handed-out unit is free again at its start, and every job started', { lane, od: handedOut, oe: hash.oe, nowUs, past, ahead, outgoing: outgoing.slice(0, 20) });
  }
  // A lane with queued work never expires; everything else of a lane does (empty lanes cost nothing).
  for (const [kind, ttl] of Object.entries(ttls)) {
    if (ttl === -1 && !(hold && (kind === 'hash' || kind === 'queue'))) findings.violation(`lane-key-without-ttl(${label})`, 'an idle lane expires once its slots are past', { lane, kind, key: kinds[kind] });
  }
  return Object.entries(ttls).filter(([, ttl]) => ttl !== -2).map(([kind]) => kind);
}
