// Live figures shared by every process: starts and refused submits per queue per second, counted in
// each process and added to per-second Redis counters every 200 ms (one INCRBY per queue, kind and
// second, not one per event), read back by the admin API.
import type { RedisClient } from '../redis/connection.js';
import type { ThrottleKeys } from '../throttle/keys.js';
import type { ThrottleObserver } from '../throttle/observer.js';
import type { ControlKeys, FigureKind } from './control-keys.js';

/** Counters live this long (s): the 60 s window plus room for late flushes. */
const KEEP_SECONDS = 120;

export interface QueueFigures {
  /** Starts in the last whole second. */
  startedLast1s: number;
  /** Starts in the 60 whole seconds before the current one. */
  startedLast60s: number;
  /** Submits refused (queue_full, wait_too_long, quota_exhausted) in the 60 whole seconds before the current one. */
  refusedLast60s: number;
}

export class LiveFigures implements ThrottleObserver {
  private pending = new Map<string, { queue: string; kind: FigureKind; second: number; n: number }>();
  private timer: NodeJS.Timeout | undefined;
  private target: { redis: RedisClient; keys: ControlKeys; throttleKeys: (queue: string) => ThrottleKeys } | undefined;

  /** Starts flushing to Redis (events before this are kept and flushed then). */
  attach(redis: RedisClient, keys: ControlKeys, throttleKeys: (queue: string) => ThrottleKeys, intervalMs = 200): void {
    this.target = { redis, keys, throttleKeys };
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  onStart(event: { queue: string }): void {
    this.count(event.queue, 's');
  }

  onSubmit(event: { queue: string; outcome: string }): void {
    if (event.outcome === 'queue_full' || event.outcome === 'wait_too_long' || event.outcome === 'quota_exhausted') this.count(event.queue, 'r');
  }

  private count(queue: string, kind: FigureKind): void {
    const second = Math.floor(Date.now() / 1000);
    const id = `${queue}|${kind}|${second}`;
    const entry = this.pending.get(id);
    if (entry) entry.n += 1;
    else this.pending.set(id, { queue, kind, second, n: 1 });
  }

  /** Adds the counts so far to Redis; on failure they are kept for the next flush. */
  async flush(): Promise<void> {
    const t = this.target;
    if (!t || this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending = new Map();
    const failed = await Promise.all(
      batch.map(async (e) => {
        const key = t.keys.figure(t.throttleKeys(e.queue), e.kind, e.second);
        try {
          await t.redis.incrby(key, e.n);
          await t.redis.expire(key, KEEP_SECONDS);
          return undefined;
        } catch {
          return e;
        }
      }),
    );
    for (const e of failed) {
      if (!e) continue;
      const id = `${e.queue}|${e.kind}|${e.second}`;
      const kept = this.pending.get(id);
      if (kept) kept.n += e.n;
      else this.pending.set(id, e);
    }
  }
}

/** The figures of one queue at `nowMs` (epoch ms). */
export async function readFigures(redis: RedisClient, keys: ControlKeys, t: ThrottleKeys, nowMs: number): Promise<QueueFigures> {
  const now = Math.floor(nowMs / 1000);
  const seconds = Array.from({ length: 60 }, (_, i) => now - 60 + i);
  const [started, refused] = await Promise.all([
    redis.mget(...seconds.map((s) => keys.figure(t, 's', s))),
    redis.mget(...seconds.map((s) => keys.figure(t, 'r', s))),
  ]);
  const sum = (values: (string | null)[]) => values.reduce((a, v) => a + Number(v ?? 0), 0);
  return { startedLast1s: Number(started[59] ?? 0), startedLast60s: sum(started), refusedLast60s: sum(refused) };
}
