// The rule of the bounded per-key caches (src/limiters/key-cache.ts, src/cache/recent-map.ts) with the
// plain eviction they had before stop 27: a fresh `keys().next()` per eviction, which scans every deleted
// slot from the Map's start. The reference the eviction cursor is held to (test/unit/eviction-cursor.test.ts)
// and measured against (bench/key-cache.ts).

export class PlainNearlyLru<V> {
  readonly slots = new Map<string, { value: V; movedAt: number }>();
  private moves = 0;

  constructor(private readonly maxKeys: number) {}

  /** The value of `key`, computed on a miss; a hit moves it to the young end only now and then. */
  of(key: string, compute: (key: string) => V): V {
    const slot = this.slots.get(key);
    if (slot) {
      if (this.moves - slot.movedAt >= this.maxKeys >> 1) {
        this.slots.delete(key);
        this.slots.set(key, slot);
        slot.movedAt = ++this.moves;
      }
      return slot.value;
    }
    const value = compute(key);
    this.slots.set(key, { value, movedAt: ++this.moves });
    if (this.slots.size > this.maxKeys) this.slots.delete(this.slots.keys().next().value!);
    return value;
  }

  forget(key: string): void {
    this.slots.delete(key);
  }
}
