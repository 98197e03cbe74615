// The limiter's key cache: bounded, nearly least recently used out first (src/limiters/key-cache.ts).
import { describe, expect, it } from 'vitest';
import { KeyCache } from '../../src/limiters/key-cache.js';

const entryOf = (cache: KeyCache, id: string) => cache.get(id) ?? cache.add(id, `redis:${id}`);

describe('KeyCache', () => {
  it('never holds more than maxKeys entries', () => {
    const cache = new KeyCache(10);
    for (let i = 0; i < 1_000; i++) entryOf(cache, `k${i}`);
    expect(cache.size).toBe(10);
  });

  it('keeps a key used at least every maxKeys / 2 other keys, however many pass through', () => {
    const cache = new KeyCache(10);
    const hot = entryOf(cache, 'hot');
    for (let i = 0; i < 1_000; i++) {
      entryOf(cache, `k${i}`);
      if (i % 5 === 4) expect(cache.get('hot'), `after ${i + 1} other keys`).toBe(hot);
    }
  });

  it('drops a key no longer used once maxKeys other keys came after it (admission: always)', () => {
    const cache = new KeyCache(10, 'always');
    entryOf(cache, 'cold');
    for (let i = 0; i < 9; i++) entryOf(cache, `k${i}`);
    expect(cache.get('cold')).toBeDefined();
    for (let i = 9; i < 19; i++) entryOf(cache, `k${i}`);
    expect(cache.get('cold')).toBeUndefined();
  });

  it('keeps a key for at least maxKeys / 2 other keys after its last use', () => {
    const cache = new KeyCache(10);
    for (let round = 0; round < 50; round++) {
      const used = entryOf(cache, 'k');
      for (let i = 0; i < 4; i++) entryOf(cache, `r${round}-${i}`);
      expect(cache.get('k'), `round ${round}`).toBe(used);
      for (let i = 4; i < 5 + (round % 4); i++) entryOf(cache, `r${round}-${i}`);
    }
  });

  it('once full, keeps a new key only on its second sighting, and a key seen once evicts nobody', () => {
    const cache = new KeyCache(10);
    for (let i = 0; i < 10; i++) entryOf(cache, `k${i}`);
    // 1,000 callers seen once each: each gets an entry for its call, none is kept, none of the ten leaves.
    for (let i = 0; i < 1_000; i++) {
      const e = entryOf(cache, `once${i}`);
      expect(e.redisKey).toBe(`redis:once${i}`);
      expect(cache.get(`once${i}`)).toBeUndefined();
    }
    for (let i = 0; i < 10; i++) expect(cache.get(`k${i}`), `k${i}`).toBeDefined();
    // A caller that comes back is kept on its second call, in the oldest entry's place.
    expect(cache.get('back')).toBeUndefined();
    entryOf(cache, 'back');
    expect(cache.get('back')).toBeUndefined();
    const kept = entryOf(cache, 'back');
    expect(cache.get('back')).toBe(kept);
    expect(cache.size).toBe(10);
    expect(cache.get('k0')).toBeUndefined();
  });

  it('while it has room, keeps every key at once', () => {
    const cache = new KeyCache(10);
    for (let i = 0; i < 10; i++) {
      const e = entryOf(cache, `k${i}`);
      expect(cache.get(`k${i}`)).toBe(e);
    }
  });
});
