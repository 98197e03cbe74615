// SourceMemo: the value of an identity source that is a pure function of a few request fields (the
// client network of a peer address and its X-Forwarded-For; the route group of a method and path),
// worked out once per distinct input instead of on every request. Bounded, least recently used first out.
// Never for a secret: its inputs (an API key) would be Map keys.

/** Default bound: an address or a path and its answer, a few hundred bytes each. */
export const DEFAULT_SOURCE_MEMO_SIZE = 4_096;

export class SourceMemo {
  /** undefined answers are kept too (a path in no route group): `has` tells them from a miss. */
  private readonly values = new Map<string, string | undefined>();

  constructor(private readonly maxKeys = DEFAULT_SOURCE_MEMO_SIZE) {
    if (!(Number.isInteger(maxKeys) && maxKeys >= 1)) throw new RangeError('maxKeys: an integer >= 1');
  }

  /** The answer for `key`, computed by `compute` on a miss. */
  of(key: string, compute: () => string | undefined): string | undefined {
    const map = this.values;
    const hit = map.get(key);
    if (hit !== undefined || map.has(key)) {
      // Most recently used last (a Map keeps insertion order).
      map.delete(key);
      map.set(key, hit);
      return hit;
    }
    const value = compute();
    map.set(key, value);
    if (map.size > this.maxKeys) map.delete(map.keys().next().value!);
    return value;
  }

  get size(): number {
    return this.values.size;
  }
}
