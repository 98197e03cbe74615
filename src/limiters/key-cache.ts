// KeyCache: what a limiter remembers per caller key in process memory, bounded (least recently used
// first out): the Redis key the identity maps to (so an identity marked sensitive, or one with a ':',
// is hashed once, not on every request) and, when the deny cache is on, the last refusal Redis gave
// it. A key refused until T is then refused here until T without a Redis call: a refusal never
// admits anything, and a call of the same cost cannot be allowed before T whatever other processes
// do, since they can only use quota up (docs/algorithms.md, "Deny cache").
//
// The raw identity is a Map key of this process only: never sent to Redis, never logged.

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
}

/** Default bound of one limiter's cache: ~150 B per entry, so about 1.5 MB at most. */
export const DEFAULT_KEY_CACHE_SIZE = 10_000;

export class KeyCache {
  private readonly entries = new Map<string, KeyEntry>();

  constructor(readonly maxKeys: number = DEFAULT_KEY_CACHE_SIZE) {
    if (!(Number.isInteger(maxKeys) && maxKeys >= 1)) throw new RangeError('maxKeys: an integer >= 1');
  }

  get size(): number {
    return this.entries.size;
  }

  /**
   * The entry of `id` (now the most recently used), or undefined: then `add` it. Two calls, not one
   * taking a function that makes the Redis key: that closure was made on every call, hit or miss.
   */
  get(id: string): KeyEntry | undefined {
    const entries = this.entries;
    const e = entries.get(id);
    if (e) {
      // Most recently used last: delete and re-insert (Map keeps insertion order).
      entries.delete(id);
      entries.set(id, e);
    }
    return e;
  }

  /** A new entry for `id` (not in the cache): the oldest entry goes when the cache is full. */
  add(id: string, redisKey: string): KeyEntry {
    const e: KeyEntry = { redisKey, denial: undefined };
    this.entries.set(id, e);
    if (this.entries.size > this.maxKeys) this.entries.delete(this.entries.keys().next().value!);
    return e;
  }

  /** Forgets `id` (its key was reset). */
  forget(id: string): void {
    this.entries.delete(id);
  }
}
