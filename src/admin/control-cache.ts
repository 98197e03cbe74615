// What every server and worker process knows of the control state: lane overrides and each queue's
// drain and pause flags, re-read within one poll interval (250 ms) of any change. Polling one counter
// costs one GET per interval; the hashes are read only when it moved.
import { whenReady, type RedisClient } from '../redis/connection.js';
import type { ThrottleKeys } from '../throttle/keys.js';
import type { LaneOverride, LaneOverrides } from '../throttle/lane-limits.js';
import type { ControlKeys } from './control-keys.js';
import { controlOf, type QueueControl } from './control-store.js';
import { inForce, limitsOfOverride, parseStored, type StoredOverride } from './override.js';

export interface ControlCacheOptions {
  /** How often the change counter is read (ms, default 250). */
  intervalMs?: number;
  /** Called (at each poll, until it is cleared) for a queue whose timed pause has ended. */
  onPauseEnded?: (queue: string) => void;
  /** Called (at each poll, until it is removed) for a lane override whose `until` has passed. */
  onOverrideEnded?: (queue: string, lane: string) => void;
  /** Told of a failed poll (the last known state stays in force). */
  onError?: (error: unknown) => void;
}

const NONE: QueueControl = { draining: false, paused: false };

export class ControlCache implements LaneOverrides {
  private versionRead: string | null | undefined;
  private overridesByQueue = new Map<string, Map<string, StoredOverride>>();
  private controlByQueue = new Map<string, QueueControl>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  constructor(
    private readonly redis: RedisClient,
    private readonly keys: ControlKeys,
    private readonly throttleKeys: (queue: string) => ThrottleKeys,
    private readonly queues: () => readonly string[],
    private readonly options: ControlCacheOptions = {},
  ) {}

  /** Reads everything once, then polls. */
  async start(): Promise<void> {
    await this.refresh(true);
    this.timer = setInterval(() => void this.refresh(false), this.options.intervalMs ?? 250);
    this.timer.unref();
  }

  close(): void {
    clearInterval(this.timer);
  }

  override(queue: string, laneId: string): LaneOverride | undefined {
    const o = this.overridesByQueue.get(queue)?.get(laneId);
    return o && inForce(o, Date.now()) ? limitsOfOverride(o) : undefined;
  }

  get version(): number {
    return Number(this.versionRead ?? 0) || 0;
  }

  control(queue: string): QueueControl {
    return this.controlByQueue.get(queue) ?? NONE;
  }

  /** Re-reads the state when the counter moved (or always, with `force`): the admin server calls it after a change. */
  refresh(force = true): Promise<void> {
    this.polling ??= this.poll(force).finally(() => (this.polling = undefined));
    return this.polling;
  }

  private async poll(force: boolean): Promise<void> {
    try {
      await whenReady(this.redis, 2_000);
      const version = await this.redis.get(this.keys.version);
      if (force || version !== this.versionRead) {
        await this.readAll();
        // Read before the state: the state is at least at this version.
        this.versionRead = version;
      }
      this.checkTimedPauses();
    } catch (error) {
      this.options.onError?.(error);
    }
  }

  private async readAll(): Promise<void> {
    const names = [...this.queues()];
    const read = await Promise.all(
      names.map(async (q) => {
        const t = this.throttleKeys(q);
        const [ovr, ctl] = await Promise.all([this.redis.hgetall(this.keys.overrides(t)), this.redis.hgetall(this.keys.control(t))]);
        return { q, ovr, ctl };
      }),
    );
    const overrides = new Map<string, Map<string, StoredOverride>>();
    const controls = new Map<string, QueueControl>();
    for (const { q, ovr, ctl } of read) {
      const lanes = new Map<string, StoredOverride>();
      for (const [lane, json] of Object.entries(ovr)) {
        const o = parseStored(lane, json);
        if (o) lanes.set(lane, o);
      }
      overrides.set(q, lanes);
      controls.set(q, controlOf(ctl));
    }
    this.overridesByQueue = overrides;
    this.controlByQueue = controls;
  }

  private checkTimedPauses(): void {
    const now = Date.now();
    for (const [queue, c] of this.controlByQueue) {
      if (c.paused && c.pauseUntilMs !== undefined && c.pauseUntilMs <= now) this.options.onPauseEnded?.(queue);
    }
    const ended = this.options.onOverrideEnded;
    if (!ended) return;
    for (const [queue, lanes] of this.overridesByQueue) for (const [lane, o] of lanes) if (!inForce(o, now)) ended(queue, lane);
  }
}
