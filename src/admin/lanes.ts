// Lanes as the admin API shows them: a page of the busy-lane index (busiest first, exact cursor), one
// lane's detail (depth, limits, plan, override, next start, pause, queued jobs with predicted starts),
// and an operator's pause and resume of one lane.
import { SluiceError } from '../errors.js';
import type { RedisClient } from '../redis/connection.js';
import type { ScriptRegistry } from '../redis/scripts.js';
import type { Throttle } from '../throttle/throttle.js';
import { laneLimitsOf, planOf, type LaneLimits, type LaneOverride } from '../throttle/lane-limits.js';

/** A pause with no end is this long (ms): ten years. */
export const FOREVER_MS = 10 * 365 * 86_400_000;
/** Queued jobs a lane detail lists. */
export const DETAIL_JOBS = 100;

export interface LanePage {
  /** Busy lanes in the queue (lanes with queued work). */
  total: number;
  lanes: { lane: string; depth: number }[];
  /** Opaque: pass as `cursor` for the next page; absent on the last page. */
  next?: string;
}

export interface LaneDetail {
  lane: string;
  depth: number;
  jobs: number;
  limits: LaneLimits;
  plan?: string;
  nextStartAtMs: number;
  pausedUntilMs?: number;
  /** Queued jobs (not yet dispatched to a worker) in start order. */
  queued: { id: string; cost: number; predictedStartAtMs: number }[];
}

export function encodeCursor(depth: number, lane: string): string {
  return Buffer.from(JSON.stringify([depth, lane])).toString('base64url');
}

export function decodeCursor(cursor: string): { depth: number; lane: string } {
  try {
    const [depth, lane] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof depth === 'number' && Number.isFinite(depth) && typeof lane === 'string') return { depth, lane };
  } catch {
    // fall through
  }
  throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', 'cursor: not a cursor this API returned', {
    details: [{ path: 'cursor', message: 'not a cursor this API returned', code: 'custom' }],
  });
}

/** One page of `throttle`'s busy lanes, busiest first. */
export async function lanePage(scripts: ScriptRegistry, throttle: Throttle, limit: number, cursor?: string): Promise<LanePage> {
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  // A sharded throttle: each shard's page after the same cursor, merged in the same order (busiest
  // first, then by lane id, descending as the script orders them), is the throttle's page.
  const replies = await Promise.all(
    throttle.shards.map((t) => scripts.runPositional('admin-lanes-page', [t.keys.busy], [limit, after ? after.depth : '', after ? after.lane : '']) as Promise<(string | number)[]>),
  );
  let total = 0;
  let lanes: LanePage['lanes'] = [];
  for (const reply of replies) {
    total += Number(reply[0]);
    for (let i = 1; i + 1 < reply.length; i += 2) lanes.push({ lane: String(reply[i]), depth: Number(reply[i + 1]) });
  }
  if (replies.length > 1) lanes = lanes.sort((a, b) => b.depth - a.depth || (a.lane > b.lane ? -1 : a.lane < b.lane ? 1 : 0)).slice(0, limit);
  const last = lanes[lanes.length - 1];
  return { total, lanes, ...(lanes.length === limit && last ? { next: encodeCursor(last.depth, last.lane) } : {}) };
}

/** A lane's detail; null when the lane has no state (never used, or expired). */
export async function laneDetail(redis: RedisClient, sharded: Throttle, laneId: string): Promise<LaneDetail | null> {
  const throttle = sharded.forLane(laneId);
  const k = throttle.keys;
  const [time, hash, queued, jobs, heldUntil] = await Promise.all([
    redis.time(),
    redis.hgetall(k.lane(laneId)),
    redis.zrange(k.laneQueue(laneId), '0', String(DETAIL_JOBS - 1), 'WITHSCORES'),
    redis.zcard(k.laneQueue(laneId)),
    // A busy lane's instant in the waiting set: when the dispatcher may start it (a key quota without room: its window's end).
    redis.zscore(k.waiting, laneId),
  ]);
  if (Object.keys(hash).length === 0 && jobs === 0) return null;
  const nowMs = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  const num = (f: string) => Number(hash[f] ?? 0);
  const plan = hash.n;
  const limits = throttle.limitsOf(laneId, plan);
  const intervalUs = Math.max(1, Math.round(1e6 / limits.ratePerSecond));
  // The lane's next start (its rate less the burst, its pause, or the dispatcher's instant for it), then
  // one start per lane interval: under a global cap a busy lane may run slower (its fair share), never faster.
  const nextUs = Math.max(nowMs * 1000, num('c') - limits.burst * intervalUs, num('p'), Number(heldUntil ?? 0));
  let ahead = 0;
  const list: LaneDetail['queued'] = [];
  for (let i = 0; i < queued.length; i += 2) {
    const m = queued[i]!;
    const bar = m.lastIndexOf('|');
    const cost = Number(m.slice(bar + 1));
    list.push({ id: m.slice(0, bar), cost, predictedStartAtMs: Math.ceil((nextUs + ahead * intervalUs) / 1000) });
    ahead += cost;
  }
  return {
    lane: laneId,
    depth: num('d'),
    jobs,
    limits,
    ...(plan !== undefined ? { plan } : {}),
    nextStartAtMs: Math.ceil(nextUs / 1000),
    ...(num('p') > nowMs * 1000 ? { pausedUntilMs: Math.ceil(num('p') / 1000) } : {}),
    queued: list,
  };
}

/** Pauses a lane until `untilMs` (or for ten years); resolves with when it resumes (epoch ms). */
export async function pauseLane(throttle: Throttle, laneId: string, untilMs: number | undefined, nowMs: number): Promise<number> {
  const ms = untilMs === undefined ? FOREVER_MS : Math.max(1, untilMs - nowMs);
  return Math.ceil((await throttle.forLane(laneId).gateLanes.pause(laneId, ms, 'lane')) / 1000);
}

/**
 * Ends a lane's pause now: the dispatcher may start its queued jobs at once, at the lane's rate.
 * Resolves with the pause end it cleared (epoch ms; 0: the lane was not paused).
 */
export async function resumeLane(scripts: ScriptRegistry, redis: RedisClient, sharded: Throttle, laneId: string): Promise<number> {
  const throttle = sharded.forLane(laneId);
  const k = throttle.keys;
  const was = Number(await scripts.runPositional('admin-lane-resume', [k.lane(laneId), k.waiting, k.ready, k.wake], ['', laneId, throttle.timing.marginPpm]));
  return was === 0 ? 0 : Math.ceil(was / 1000);
}

/**
 * Paces a lane's queued work by its limits with `override` on top (undefined: none), at once: the
 * dispatcher reads a lane's interval and burst from the lane itself. `version`: the control version of
 * the change; until a process has seen it, its admissions and its workers' calls keep the lane's (not
 * their own) interval and burst. An override that ends by itself (`until`) is removed and followed at
 * once by the first process that sees it end (override-end.ts).
 */
export async function applyOverride(redis: RedisClient, throttle: Throttle, laneId: string, override: LaneOverride | undefined, version: number): Promise<void> {
  const plan = (await redis.hget(throttle.forLane(laneId).keys.lane(laneId), 'n')) ?? undefined;
  await throttle.applyLimits(laneId, laneLimitsOf(throttle.config, planOf(throttle.config, plan)?.limits, override), version);
}
