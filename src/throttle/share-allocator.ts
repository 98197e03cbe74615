// The division of a sharded throttle's global cap among its shards, kept current by the processes that
// run its workers: every DIVIDE_MS one of them (the holder of a short lease) reads each shard's demand
// (lua/throttle-demand.lua: the sum of its busy lanes' rates), divides the cap (shares.ts) and writes
// each shard's share into its global hash (`xi` µs between starts, `xe` until when it holds), where its
// dispatcher, admission, outflow gate and reconciliation read it. Lower first, raise later: shares that
// shrink are written first, the ones that grow one dispatch horizon after, once the starts handed out
// ahead at the old shares have begun, so the shards' shares never sum above the cap meanwhile.
import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { ScriptRegistry } from '../redis/scripts.js';
import type { ThrottleTiming } from './config.js';
import type { ThrottleKeys } from './keys.js';
import { redisClock } from './redis-clock.js';
import { divideCap } from './shares.js';
import { sleep } from './sleep.js';

/** How often the cap is divided again (ms). */
export const DIVIDE_MS = 200;
/** A share holds this long unless written again (ms): with no allocator left, shards fall back to an equal split. */
export const SHARE_TTL_MS = 3_000;
/** The allocator's lease (ms): another process takes over within about this long after the holder died. */
const LEASE_MS = 1_000;
/** Busy lanes whose rates are read per shard and division (the rest counted at their mean). */
const DEMAND_SAMPLE = 64;

export interface ShardSide {
  keys: ThrottleKeys;
  timing: ThrottleTiming;
}

export interface ShardShare {
  /** Busy lanes of the shard. */
  busyLanes: number;
  /** The sum of its busy lanes' rates (cost units per second). */
  demand: number;
  /** Its share of the cap now (starts per second; the equal split when none is written or it expired). */
  share: number;
}

export class ShareAllocator {
  private users = 0;
  private loop: Promise<void> | undefined;
  private stopping = false;
  private wake: (() => void) | undefined;
  private readonly me = randomBytes(8).toString('hex');

  constructor(
    private readonly client: Redis | Cluster,
    private readonly scripts: ScriptRegistry,
    private readonly base: ThrottleKeys,
    private readonly shards: readonly ShardSide[],
    private readonly cap: number,
  ) {}

  /** One more user (a worker of the throttle in this process): the loop runs while there is one. */
  acquire(): void {
    this.users++;
    if (!this.loop) {
      this.stopping = false;
      this.loop = this.run();
    }
  }

  async release(): Promise<void> {
    this.users = Math.max(0, this.users - 1);
    if (this.users > 0 || !this.loop) return;
    this.stopping = true;
    this.wake?.();
    await this.loop;
    this.loop = undefined;
  }

  async close(): Promise<void> {
    this.users = 1;
    await this.release();
  }

  /** Each shard's demand and current share, read from Redis. */
  async read(): Promise<ShardShare[]> {
    const nowUs = redisClock.nowUs();
    return Promise.all(
      this.shards.map(async ({ keys, timing }) => {
        const r = (await this.scripts.run('throttle-demand', { busy: keys.busy, global: keys.global }, {
          lanePrefix: keys.lanePrefix,
          sample: DEMAND_SAMPLE,
          laneIntervalUs: timing.laneIntervalUs,
        })) as number[];
        const interval = Number(r[3]) > nowUs && Number(r[2]) > 0 ? Number(r[2]) : timing.globalIntervalUs;
        return { busyLanes: Number(r[0]), demand: Number(r[1]) / 1000, share: Math.round(1e6 / interval) };
      }),
    );
  }

  /**
   * Divides the cap once by the shards' demand now and writes the shares (lower first, raise one
   * horizon later). Returns the shares written. Any process may call it; the loop calls it on the lease holder.
   */
  async divide(): Promise<number[]> {
    const now = await this.read();
    const shares = divideCap(this.cap, now.map((s) => s.demand));
    // Compared with Redis TIME by the scripts: written on Redis's clock as this process knows it.
    const until = () => String(redisClock.nowUs() + SHARE_TTL_MS * 1000);
    const write = (i: number) => this.client.hset(this.shards[i]!.keys.global, 'xi', String(Math.round(1e6 / shares[i]!)), 'xe', until());
    const raised = shares.map((s, i) => (s > now[i]!.share ? i : -1)).filter((i) => i >= 0);
    const lowered = shares.map((_, i) => i).filter((i) => !raised.includes(i));
    await Promise.all(lowered.map(write));
    if (raised.length > 0) {
      // Only once the starts the shrunk shards handed out ahead (within their horizon) have begun.
      if (lowered.some((i) => shares[i]! < now[i]!.share)) await sleep(Math.max(...this.shards.map((s) => s.timing.leadUs)) / 1000 + 10);
      await Promise.all(raised.map(write));
    }
    return shares;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      try {
        if (await this.lead()) await this.divide();
      } catch {
        // Redis away: the shares written last hold until they expire, then the equal split applies.
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, DIVIDE_MS);
        function done() {
          clearTimeout(timer);
          resolve();
        }
        this.wake = done;
      });
      this.wake = undefined;
    }
  }

  /** Takes or keeps the lease: one process divides at a time (two would write shares from different reads). */
  private async lead(): Promise<boolean> {
    if ((await this.client.set(this.base.shareLease, this.me, 'PX', LEASE_MS, 'NX')) === 'OK') return true;
    if ((await this.client.get(this.base.shareLease)) !== this.me) return false;
    return (await this.client.pexpire(this.base.shareLease, LEASE_MS)) === 1;
  }
}
