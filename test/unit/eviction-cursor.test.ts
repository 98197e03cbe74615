// The bounded per-key caches (src/limiters/key-cache.ts, src/cache/recent-map.ts) evict through a cursor
// kept from one eviction to the next instead of a fresh `keys().next()` per eviction (a fresh one scans
// every deleted slot from the Map's start: ~4.5 µs per new key under churn, bench/key-cache.ts). Held
// here to the plain version's behaviour, entry for entry and in order, over random sequences of uses and
// forgets: the same entries are kept, the same ones leave. The caches keep every key here (admission
// 'always'): which keys a full cache lets in (the doorkeeper, test/unit/cache/doorkeeper.test.ts) is
// apart from which one leaves for them.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeyCache } from '../../src/limiters/key-cache.js';
import { RecentMap } from '../../src/cache/recent-map.js';
import { PlainNearlyLru } from '../helpers/plain-eviction.js';

type Op = { use: string } | { forget: string };

const ops = fc.array(
  fc.oneof(
    { weight: 9, arbitrary: fc.integer({ min: 0, max: 40 }).map((k): Op => ({ use: `k${k}` })) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 40 }).map((k): Op => ({ forget: `k${k}` })) },
  ),
  { minLength: 50, maxLength: 600 },
);

const keysOf = (map: Map<string, unknown>) => [...map.keys()];

describe('the eviction cursor', () => {
  it('KeyCache keeps exactly the entries, in the order, that the plain eviction keeps', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), ops, (maxKeys, sequence) => {
        const cache = new KeyCache(maxKeys, 'always');
        const plain = new PlainNearlyLru<string>(maxKeys);
        const entries = (cache as unknown as { entries: Map<string, unknown> }).entries;
        for (const op of sequence) {
          if ('use' in op) {
            if (!cache.get(op.use)) cache.add(op.use, `redis:${op.use}`);
            plain.of(op.use, (k) => k);
          } else {
            cache.forget(op.forget);
            plain.forget(op.forget);
          }
          expect(keysOf(entries)).toEqual(keysOf(plain.slots));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('RecentMap keeps exactly the entries, in the order, that the plain eviction keeps (uses only: it has no forget)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), ops, (maxKeys, sequence) => {
        const map = new RecentMap<string>(maxKeys, 'always');
        const plain = new PlainNearlyLru<string>(maxKeys);
        const slots = (map as unknown as { slots: Map<string, unknown> }).slots;
        for (const op of sequence) {
          const key = 'use' in op ? op.use : op.forget;
          expect(map.of(key, (k) => `v:${k}`)).toBe(`v:${key}`);
          plain.of(key, (k) => k);
          expect(keysOf(slots)).toEqual(keysOf(plain.slots));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('a cache emptied by forgets and filled again evicts its oldest entry (the cursor passes the forgotten slots)', () => {
    const cache = new KeyCache(2, 'always');
    for (const k of ['a', 'b', 'c']) cache.add(k, k);
    for (const k of ['b', 'c']) cache.forget(k);
    expect(cache.size).toBe(0);
    for (const k of ['d', 'e', 'f']) cache.add(k, k);
    expect(cache.get('d')).toBeUndefined();
    expect(cache.get('e')?.redisKey).toBe('e');
    expect(cache.get('f')?.redisKey).toBe('f');
  });
});
