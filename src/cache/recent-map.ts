// RecentMap: a bounded map of values worked out per request key (a client network, a route group,
// a key's hash or identity), nearly least recently used first out. A hit costs one Map lookup: an
// entry moves to the young end (delete and re-insert; a Map keeps insertion order) only when half
// the map (maxKeys / 2, rounded down) or more has moved or arrived since it last did. Moving on every
// hit made each request of a hot key a Map delete and insert, whose churn (the Map's table rehashed
// as deleted slots pile up) was ~4 % of a three-rule request's CPU and its garbage (issue 12 item 1).
// An entry leaves only after maxKeys - 1 moves since its own last move, so one used at least once
// per maxKeys / 2 others is never dropped. Once full, a new key is kept only when it was seen before,
// recently (Doorkeeper): a key seen once is computed for its request and not kept, so it evicts nobody.
// Holds raw request keys: process memory only, never logged.
import { CacheDoor, type Admission } from './doorkeeper.js';

interface Slot<V> {
  value: V;
  movedAt: number;
}

export class RecentMap<V> {
  private readonly slots = new Map<string, Slot<V>>();
  /** Entries added or moved to the young end so far. */
  private moves = 0;
  /**
   * The eviction cursor, kept from one eviction to the next: a fresh `keys().next()` scans every deleted
   * slot from the table's start (a Map keeps them until its table is rebuilt), ~4.5 µs per new key under
   * churn (bench/key-cache.ts); every entry before the cursor has been deleted, so its next key is the
   * oldest entry, and it passes each deleted slot once.
   */
  private oldest: IterableIterator<string> = this.slots.keys();
  /** Which new keys it keeps once full (src/cache/doorkeeper.ts). */
  private readonly door: CacheDoor;

  /**
   * `admission`: 'seen-twice' (default) keeps a new key in a full map only on its second recent sighting;
   * 'always' keeps every key (and evicts for it).
   */
  constructor(
    readonly maxKeys: number,
    admission: Admission = 'seen-twice',
  ) {
    if (!(Number.isInteger(maxKeys) && maxKeys >= 1)) throw new RangeError('maxKeys: an integer >= 1');
    this.door = new CacheDoor(maxKeys, admission);
  }

  /** The value of `key`, computed by `compute` (and kept) on a miss; undefined values are kept too. */
  of(key: string, compute: (key: string) => V): V {
    const slots = this.slots;
    const slot = slots.get(key);
    if (slot !== undefined) {
      if (this.moves - slot.movedAt >= this.maxKeys >> 1) {
        slots.delete(key);
        slots.set(key, slot);
        slot.movedAt = ++this.moves;
      }
      return slot.value;
    }
    const value = compute(key);
    if (!this.door.keeps(key, slots.size)) return value;
    slots.set(key, { value, movedAt: ++this.moves });
    if (slots.size > this.maxKeys) {
      let next = this.oldest.next();
      // (Done only once every entry it could see is gone: a new cursor then starts at the oldest.)
      if (next.done) next = (this.oldest = slots.keys()).next();
      if (!next.done) slots.delete(next.value);
    }
    return value;
  }

  get size(): number {
    return this.slots.size;
  }
}
