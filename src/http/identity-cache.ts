// IdentityCache: a value worked out once per request key (bounded, nearly least recently used first
// out: RecentMap) instead of on every request: the hash of a secret (an API key: an HMAC or SHA-256),
// the descriptor identity of a policy's key. The raw key is a Map key of this process only: never sent
// to Redis, never logged.
import { RecentMap } from '../cache/recent-map.js';

/** Default bound: a few hundred bytes per key, so about 2-3 MB at most. */
export const DEFAULT_IDENTITY_CACHE_SIZE = 10_000;

export class IdentityCache {
  private readonly identities: RecentMap<string>;

  constructor(
    private readonly compute: (key: string) => string,
    maxKeys = DEFAULT_IDENTITY_CACHE_SIZE,
  ) {
    this.identities = new RecentMap(maxKeys);
  }

  of(key: string): string {
    return this.identities.of(key, this.compute);
  }

  get size(): number {
    return this.identities.size;
  }
}
