// Every Redis key of one throttle. They all share one hash tag, so on a cluster the lanes, the global
// meter and the throttle's BullMQ queue live in one slot and each script touches a single slot.
import { randomFillSync } from 'node:crypto';
import type { IdentityOptions, KeyBuilder } from '../redis/keys.js';
import { shardJobId, shardSuffix } from './shards.js';

export class ThrottleKeys {
  /** `<prefix>:v1:{t:<name>}` */
  readonly tag: string;
  /** The throttle's configuration (JSON), so workers in other processes read the same rates. */
  readonly config: string;
  /** Lanes with queued work: lane id -> queued cost units (the busy-lane index). */
  readonly busy: string;
  /** The global outflow meter. */
  readonly global: string;
  /** Pending admissions: `<job id>|<cost>|<lane id>` -> µs by which its job must exist (lane repair's index). */
  readonly pending: string;
  /** BullMQ prefix: the queue's keys are `<bullPrefix>:<name>:...`, inside the same hash tag. */
  readonly bullPrefix: string;
  /** Busy lanes not yet allowed to start: lane id -> real µs their own rate (or pause) allows a start. */
  readonly waiting: string;
  /** Busy lanes allowed to start: lane id -> fair tag (the dispatcher serves the smallest). */
  readonly ready: string;
  /** Dispatched jobs not yet taken by a worker: `<job id>|<cost>|<lane id>` -> start µs. */
  readonly dispatched: string;
  /** The channel dispatchers listen on between rounds; an admission into an idle lane publishes to it. */
  readonly wake: string;
  /** `lanePrefix + laneId` is a lane's key (the dispatcher builds lane keys from it). */
  readonly lanePrefix: string;
  /** Job transitions (admitted, started, ... progress): a stream capped with MAXLEN ~ (events.ts). */
  readonly events: string;

  /** The shard the shares allocator's lease names (sharded throttles only; on the base tag). */
  readonly shareLease: string;

  /**
   * `shard`: shard `index` of a throttle of `count` shards (its own hash tag, src/throttle/shards.ts);
   * absent or a count of 1: the throttle's one tag `{t:<name>}`, where a sharded throttle keeps its
   * configuration and the shares allocator's lease.
   */
  constructor(
    private readonly keys: KeyBuilder,
    readonly name: string,
    readonly shard: { index: number; count: number } = { index: 0, count: 1 },
  ) {
    this.tag = keys.throttleTag(name, shardSuffix(name, shard.index, shard.count));
    this.shareLease = `${this.tag}:shl`;
    this.config = `${this.tag}:cfg`;
    this.busy = `${this.tag}:busy`;
    this.global = `${this.tag}:g`;
    this.pending = `${this.tag}:pend`;
    this.bullPrefix = `${this.tag}:bull`;
    this.waiting = `${this.tag}:lw`;
    this.ready = `${this.tag}:lr`;
    this.dispatched = `${this.tag}:disp`;
    this.wake = `${this.tag}:wake`;
    this.lanePrefix = `${this.tag}:l:`;
    this.events = `${this.tag}:ev`;
  }

  /** The lane id of a key: the key itself when short and safe, else its hash (never a raw secret). */
  laneId(key: string, options: IdentityOptions = {}): string {
    return this.keys.identity(key, options);
  }

  lane(laneId: string): string {
    return `${this.lanePrefix}${laneId}`;
  }

  /** A lane's jobs handed to the workers and not yet started: member -> start µs (they hold capacity until then). */
  laneOutgoing(laneId: string): string {
    return `${this.lanePrefix}${laneId}:o`;
  }

  /** A lane's members handed out again after a worker sent them back -> the lane key they keep (lua/includes/lane.lua). */
  laneBack(laneId: string): string {
    return `${this.lanePrefix}${laneId}:k`;
  }

  /** The delivery attempts of a job's callback (a list of JSON records, kept 7 days). */
  callbackAttempts(jobId: string): string {
    return `${this.tag}:cba:${jobId}`;
  }

  laneQueue(laneId: string): string {
    return `${this.tag}:l:${laneId}:q`;
  }

  /** The BullMQ job hash of a job id (BullMQ's own layout: `<prefix>:<queue>:<id>`). */
  job(jobId: string): string {
    return `${this.jobPrefix}${jobId}`;
  }

  /** `jobPrefix + jobId` is a BullMQ job hash; its queue's own keys are `jobPrefix + 'meta'` and so on. */
  get jobPrefix(): string {
    return `${this.bullPrefix}:${this.name}:`;
  }

  /**
   * A job id: from an idempotency key (hashed: the same key always gives the same id, and a key that
   * is itself a secret never reaches Redis), or random.
   */
  jobId(idempotencyKey?: string): string {
    const id = idempotencyKey !== undefined ? `i${this.keys.hash(`${this.name}\u0000${idempotencyKey}`)}` : `j${randomId()}`;
    return shardJobId(id, this.shard.index, this.shard.count);
  }
}

/** Random bytes for job ids, drawn 256 ids at a time: one call to the system's generator per id cost ~4 µs a submit. */
const ID_BYTES = 12;
const pool = Buffer.alloc(ID_BYTES * 256);
let poolAt = pool.length;

/** 12 random bytes as base64url (16 characters), as randomBytes(12).toString('base64url') gives them. */
function randomId(): string {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const id = pool.toString('base64url', poolAt, poolAt + ID_BYTES);
  poolAt += ID_BYTES;
  return id;
}

/** A lane queue member: `<job id>|<cost>` (the cost rides along so a lane can be repaired from it). */
export function laneMember(jobId: string, cost: number): string {
  return `${jobId}|${cost}`;
}
