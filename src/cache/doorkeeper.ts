// Doorkeeper: the admission filter of the bounded per-key caches (RecentMap, KeyCache) once they are
// full. A key is let in only when it was seen before, recently: its fingerprint is still in its slot
// of a fixed table. A key seen once (a new caller among 100,000 that come in turn) is worked out for
// its request and not kept, so it evicts nobody.
//
// Why: under churn (more distinct callers than a cache holds) every request of a new key was a miss,
// an insert and an eviction in each cache of its path (the client network, the request's matches, one
// key cache per limiter), and the kept entries lived just long enough to be promoted to the old
// generation before they were dropped: the major collections and the Map's rehashing cost more than
// the work the caches saved. Three rules with 100,000 callers took 55-58 µs of Node CPU per request,
// 33-35 with no caches at all (bench/middleware-cpu.ts --clients 100000). A hot key is let in on its
// second request and then hits as before.
//
// The table is made when the cache first fills (a cache that never fills never needs it) and holds
// one 32-bit fingerprint per slot, a power of two at least the cache's size: no objects, no garbage.
// A fingerprint's collision only lets a key in early; a slot taken over by another key only makes a
// returning key wait for one more sighting. Fingerprints are of this process only: never stored
// elsewhere, never logged.

/** Keys longer than this are fingerprinted by their first and last halves of it and their length. */
const SAMPLED_CHARS = 64;

export class Doorkeeper {
  private readonly seen: Int32Array;
  private readonly mask: number;

  /** A table for a cache of `maxKeys` entries. */
  constructor(maxKeys: number) {
    let slots = 1024;
    while (slots < maxKeys && slots < 1 << 22) slots <<= 1;
    this.seen = new Int32Array(slots);
    this.mask = slots - 1;
  }

  /** True when `key` was seen since its slot last changed hands (let it in); else remembers it: false. */
  admits(key: string): boolean {
    const h = fingerprint(key);
    // The slot from the high bits, so that keys differing only in their last character (addresses, ids
    // counted up) spread over the table as well as the low bits do.
    const slot = (Math.imul(h, 0x9e3779b1) >>> 10) & this.mask;
    if (this.seen[slot] === h) return true;
    this.seen[slot] = h;
    return false;
  }
}

/** Which new keys a full cache keeps: 'seen-twice' (through a Doorkeeper) or 'always' (evicting for each). */
export type Admission = 'seen-twice' | 'always';

/**
 * The door of one bounded cache (RecentMap, KeyCache): every key is kept while the cache has room; once
 * it is full, with 'seen-twice', only a key its Doorkeeper lets in (the table made then).
 */
export class CacheDoor {
  private doorkeeper: Doorkeeper | null = null;

  constructor(
    private readonly maxKeys: number,
    private readonly admission: Admission,
  ) {}

  /** True when a cache holding `size` keys should keep `key` (and evict its oldest when full). */
  keeps(key: string, size: number): boolean {
    if (size < this.maxKeys || this.admission === 'always') return true;
    return (this.doorkeeper ??= new Doorkeeper(this.maxKeys)).admits(key);
  }
}

/** FNV-1a over the key's UTF-16 code units (a long key: its first and last SAMPLED_CHARS / 2 and its length). */
export function fingerprint(key: string): number {
  let h = 0x811c9dc5;
  const n = key.length;
  if (n <= SAMPLED_CHARS) {
    for (let i = 0; i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
    return h;
  }
  const half = SAMPLED_CHARS >> 1;
  for (let i = 0; i < half; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  for (let i = n - half; i < n; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return Math.imul(h ^ n, 0x01000193);
}
