// IdentityCache: a value worked out once per request key (bounded, least recently used first out)
// instead of on every request: the hash of a secret (an API key: an HMAC or SHA-256), the descriptor
// identity of a policy's key. The raw key is a Map key of this process only: never sent to Redis,
// never logged.

/** Default bound: a few hundred bytes per key, so about 2-3 MB at most. */
export const DEFAULT_IDENTITY_CACHE_SIZE = 10_000;

export class IdentityCache {
  private readonly identities = new Map<string, string>();

  constructor(
    private readonly compute: (key: string) => string,
    private readonly maxKeys = DEFAULT_IDENTITY_CACHE_SIZE,
  ) {}

  of(key: string): string {
    const map = this.identities;
    let identity = map.get(key);
    if (identity !== undefined) {
      map.delete(key);
      map.set(key, identity);
      return identity;
    }
    identity = this.compute(key);
    map.set(key, identity);
    if (map.size > this.maxKeys) map.delete(map.keys().next().value!);
    return identity;
  }

  get size(): number {
    return this.identities.size;
  }
}
