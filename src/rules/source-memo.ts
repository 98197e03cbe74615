// SourceMemo: the value of an identity source that is a pure function of a few request fields (the
// client network of a peer address and its X-Forwarded-For; the route group of a method and path),
// worked out once per distinct input instead of on every request. Bounded, nearly least recently used
// first out (RecentMap). Never for a secret: its inputs (an API key) would be Map keys.
import { RecentMap } from '../cache/recent-map.js';

/** Default bound: an address or a path and its answer, a few hundred bytes each. */
export const DEFAULT_SOURCE_MEMO_SIZE = 4_096;

export class SourceMemo {
  /** undefined answers are kept too (a path in no route group). */
  private readonly values: RecentMap<string | undefined>;

  constructor(maxKeys = DEFAULT_SOURCE_MEMO_SIZE) {
    this.values = new RecentMap(maxKeys);
  }

  /** The answer for `key`, computed by `compute` on a miss. */
  of(key: string, compute: () => string | undefined): string | undefined {
    return this.values.of(key, compute);
  }

  get size(): number {
    return this.values.size;
  }
}
