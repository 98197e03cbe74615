// Writing the control state of a queue: lane overrides, drain, queue pause. Every write bumps the
// shared change counter, which every process's ControlCache polls.
import { whenReady, type RedisClient } from '../redis/connection.js';
import { ScriptRegistry } from '../redis/scripts.js';
import type { ThrottleKeys } from '../throttle/keys.js';
import type { ControlKeys } from './control-keys.js';
import { inForce, parseStored, type OverrideBody, type StoredOverride } from './override.js';

/** A queue's control flags. */
export interface QueueControl {
  draining: boolean;
  /** Paused by an operator (BullMQ's queue pause). */
  paused: boolean;
  /** When a pause with an end resumes by itself (epoch ms). */
  pauseUntilMs?: number;
}

export function controlOf(fields: Record<string, string>): QueueControl {
  const c: QueueControl = { draining: fields.drain === '1', paused: fields.pause === '1' };
  if (fields.pauseUntil !== undefined && Number.isFinite(Number(fields.pauseUntil))) c.pauseUntilMs = Number(fields.pauseUntil);
  return c;
}

export class ControlStore {
  /** For endOverride's compare-and-remove (made on first use). */
  private scripts: ScriptRegistry | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: ControlKeys,
  ) {}

  /** `version`: the control version of the change (lanes are paced by it: Throttle.applyLimits). */
  async setOverride(t: ThrottleKeys, lane: string, body: OverrideBody, by: string, nowMs: number): Promise<{ stored: StoredOverride; version: number }> {
    await this.ready();
    const { until, ...limits } = body;
    const stored: StoredOverride = { lane, ...limits, ...(until !== undefined ? { untilMs: Date.parse(until) } : {}), by, atMs: nowMs };
    const { lane: _lane, ...value } = stored;
    await this.redis.hset(this.keys.overrides(t), lane, JSON.stringify(value));
    return { stored, version: await this.bump() };
  }

  /** `removed`: there was an override to remove; `version`: the control version of the change. */
  async removeOverride(t: ThrottleKeys, lane: string): Promise<{ removed: boolean; version: number }> {
    await this.ready();
    const removed = await this.redis.hdel(this.keys.overrides(t), lane);
    return { removed: removed > 0, version: await this.bump() };
  }

  /**
   * Removes `lane`'s override when it has ended by `nowMs` and is still the one stored (a new one set
   * meanwhile stays: lua/admin-override-end.lua). Undefined when nothing was removed here; else the
   * override that ended (undefined for a stored value that no longer parses: never in force, removed
   * too) and the control version of its removal.
   */
  async endOverride(t: ThrottleKeys, lane: string, nowMs: number): Promise<{ ended: StoredOverride | undefined; version: number } | undefined> {
    await this.ready();
    const json = await this.redis.hget(this.keys.overrides(t), lane);
    if (json === null) return undefined;
    const ended = parseStored(lane, json);
    if (ended && inForce(ended, nowMs)) return undefined;
    this.scripts ??= new ScriptRegistry(this.redis);
    if (Number(await this.scripts.runPositional('admin-override-end', [this.keys.overrides(t)], [lane, json])) !== 1) return undefined;
    return { ended, version: await this.bump() };
  }

  /**
   * The overrides in force, by lane, and the lanes whose override has ended by `nowMs` but is still
   * stored. Nothing is removed here: an ended override is removed by endOverride (endTimedOverride),
   * which also paces its lane by its plan again. A plain delete here would leave the lane at the
   * override's pace, and could delete an override an operator set meanwhile.
   */
  async overrides(t: ThrottleKeys, nowMs: number): Promise<{ inForce: StoredOverride[]; ended: string[] }> {
    await this.ready();
    const all = await this.redis.hgetall(this.keys.overrides(t));
    const inForceList: StoredOverride[] = [];
    const ended: string[] = [];
    for (const [lane, json] of Object.entries(all)) {
      const o = parseStored(lane, json);
      if (o && inForce(o, nowMs)) inForceList.push(o);
      else ended.push(lane);
    }
    return { inForce: inForceList.sort((a, b) => (a.lane < b.lane ? -1 : a.lane > b.lane ? 1 : 0)), ended: ended.sort() };
  }

  async override(t: ThrottleKeys, lane: string, nowMs: number): Promise<StoredOverride | undefined> {
    await this.ready();
    const json = await this.redis.hget(this.keys.overrides(t), lane);
    const o = json === null ? undefined : parseStored(lane, json);
    return o && inForce(o, nowMs) ? o : undefined;
  }

  async control(t: ThrottleKeys): Promise<QueueControl> {
    await this.ready();
    return controlOf(await this.redis.hgetall(this.keys.control(t)));
  }

  async setDrain(t: ThrottleKeys, on: boolean): Promise<void> {
    await this.ready();
    if (on) await this.redis.hset(this.keys.control(t), 'drain', '1');
    else await this.redis.hdel(this.keys.control(t), 'drain');
    await this.bump();
  }

  async setPause(t: ThrottleKeys, untilMs: number | undefined): Promise<void> {
    await this.ready();
    const key = this.keys.control(t);
    if (untilMs === undefined) await this.redis.hdel(key, 'pauseUntil');
    await this.redis.hset(key, 'pause', '1', ...(untilMs !== undefined ? ['pauseUntil', String(untilMs)] : []));
    await this.bump();
  }

  /** Clears the pause flags; true when this call cleared them (so one process records a timed resume). */
  async clearPause(t: ThrottleKeys): Promise<boolean> {
    await this.ready();
    const cleared = await this.redis.hdel(this.keys.control(t), 'pause', 'pauseUntil');
    await this.bump();
    return cleared > 0;
  }

  /** The hot-path client queues nothing while it connects: wait for it (an admin call may be the first). */
  private ready(): Promise<void> {
    return whenReady(this.redis, 2_000);
  }

  private async bump(): Promise<number> {
    return this.redis.incr(this.keys.version);
  }
}
