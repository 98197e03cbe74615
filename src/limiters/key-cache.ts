// KeyCache: what a limiter remembers per caller key in process memory, bounded (nearly least recently
// used first out, see get): the Redis key the identity maps to (so an identity marked sensitive, or one with a ':',
// is hashed once, not on every request) and, when the deny cache is on, the last refusal Redis gave
// it. A key refused until T is then refused here until T without a Redis call: a refusal never
// admits anything, and a call of the same cost cannot be allowed before T whatever other processes
// do, since they can only use quota up (docs/algorithms.md, "Deny cache").
//
// Once full, a new identity is kept only when it was seen before, recently (src/cache/doorkeeper.ts):
// an identity seen once gets an entry for its call that is not kept, so it evicts nobody, and a refusal
// it is given is not remembered (its next call asks Redis, and is kept then).
//
// The raw identity is a Map key of this process only: never sent to Redis, never logged.
import { CacheDoor, type Admission } from '../cache/doorkeeper.js';

/** The refusal Redis gave a key: refuse calls of `cost` until `untilMs` (the cache's clock). */
export interface Denial {
  untilMs: number;
  cost: number;
  /** The refused decision's `remaining` and `resetAtMs` (in the decision's clock), repeated in the cached refusal. */
  remaining: number;
  resetAtMs: number;
}

export interface KeyEntry {
  /** The Redis key of this identity. */
  readonly redisKey: string;
  denial: Denial | undefined;
  /** The cache's move count when this entry last moved to the young end (KeyCache.get). */
  movedAt: number;
}

/** Default bound of one limiter's cache: ~150 B per entry, so about 1.5 MB at most (and 64 kB of doorkeeper once full). */
export const DEFAULT_KEY_CACHE_SIZE = 10_000;

export class KeyCache {
  private readonly entries = new Map<string, KeyEntry>();
  /** Entries added or moved to the young end so far. */
  private moves = 0;
  /**
   * The eviction cursor: one iterator over the ids kept from one eviction to the next. A Map keeps a
   * deleted entry's slot until its table is rebuilt, and a fresh `keys().next()` scans every such slot
   * from the table's start: under churn (more callers than maxKeys) that was ~4.5 µs per new caller, most
   * of a decision's Node CPU (bench/key-cache.ts). Every entry before the cursor has been deleted, so its
   * next key is the oldest entry, and it passes each deleted slot once.
   */
  private oldest: IterableIterator<string> = this.entries.keys();
  /** Which new keys it keeps once full (src/cache/doorkeeper.ts). */
  private readonly door: CacheDoor;

  /**
   * `admission`: 'seen-twice' (default) keeps a new identity in a full cache only on its second recent
   * sighting; 'always' keeps every identity (and evicts for it).
   */
  constructor(
    readonly maxKeys: number = DEFAULT_KEY_CACHE_SIZE,
    admission: Admission = 'seen-twice',
  ) {
    if (!(Number.isInteger(maxKeys) && maxKeys >= 1)) throw new RangeError('maxKeys: an integer >= 1');
    this.door = new CacheDoor(maxKeys, admission);
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The entry of `id`, or undefined: then `add` it. Two calls, not one taking a function that makes
   * the Redis key: that closure was made on every call, hit or miss.
   *
   * Nearly least recently used: a hit moves its entry to the young end (delete and re-insert: a Map
   * keeps insertion order) only when half the cache (maxKeys / 2 entries, rounded down) or more has
   * moved or arrived since it last did, so a hot key costs one Map lookup, not three. An entry leaves
   * only after maxKeys - 1 moves since its own last move, so it is kept for at least maxKeys / 2 others
   * after its last use, and one used at least that often is never dropped.
   */
  get(id: string): KeyEntry | undefined {
    const entries = this.entries;
    const e = entries.get(id);
    if (e && this.moves - e.movedAt >= this.maxKeys >> 1) {
      entries.delete(id);
      entries.set(id, e);
      e.movedAt = ++this.moves;
    }
    return e;
  }

  /**
   * A new entry for `id` (not in the cache). A full cache keeps it only when the doorkeeper lets it in,
   * and then its oldest entry goes; else the entry is this call's only.
   */
  add(id: string, redisKey: string): KeyEntry {
    const e: KeyEntry = { redisKey, denial: undefined, movedAt: 0 };
    if (!this.door.keeps(id, this.entries.size)) return e;
    e.movedAt = ++this.moves;
    this.entries.set(id, e);
    if (this.entries.size > this.maxKeys) this.evictOldest();
    return e;
  }

  private evictOldest(): void {
    let next = this.oldest.next();
    // (Done only once every entry it could see is gone: a new cursor then starts at the oldest.)
    if (next.done) next = (this.oldest = this.entries.keys()).next();
    if (!next.done) this.entries.delete(next.value);
  }

  /** Forgets `id` (its key was reset). */
  forget(id: string): void {
    this.entries.delete(id);
  }
}
