// RecentMap: computes a key once, keeps at most maxKeys, and never drops a key used at least once
// per maxKeys / 2 others, though a hit moves it only now and then.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecentMap } from '../../../src/cache/recent-map.js';

describe('RecentMap', () => {
  it('computes a key once, undefined values included, and stays within maxKeys', () => {
    const map = new RecentMap<string | undefined>(3);
    let calls = 0;
    const of = (k: string, v: string | undefined) => map.of(k, () => (calls++, v));
    expect(of('a', 'A')).toBe('A');
    expect(of('a', 'other')).toBe('A');
    expect(of('none', undefined)).toBeUndefined();
    expect(of('none', 'late')).toBeUndefined();
    expect(calls).toBe(2);
    for (const k of ['b', 'c', 'd', 'e']) of(k, k);
    expect(map.size).toBe(3);
    expect(() => new RecentMap(0)).toThrow(RangeError);
  });

  it('never drops a key used at least once per maxKeys / 2 other keys', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 40 }), fc.array(fc.integer({ min: 0, max: 1_000 }), { minLength: 1, maxLength: 400 }), (maxKeys, others) => {
        const map = new RecentMap<number>(maxKeys);
        let hotComputed = 0;
        map.of('hot', () => ++hotComputed);
        let sinceHot = 0;
        for (const o of others) {
          map.of(`k${o}`, () => o);
          if (++sinceHot >= maxKeys >> 1) {
            expect(map.of('hot', () => ++hotComputed)).toBe(1);
            sinceHot = 0;
          }
          expect(map.size).toBeLessThanOrEqual(maxKeys);
        }
        expect(hotComputed).toBe(1);
      }),
    );
  });

  it('drops the key least recently moved when full (admission: always)', () => {
    const map = new RecentMap<string>(2, 'always');
    let calls = 0;
    const of = (k: string) => map.of(k, () => (calls++, k.toUpperCase()));
    of('a');
    of('b');
    of('a'); // a moves: b arrived since
    of('c'); // drops b
    expect(calls).toBe(3);
    of('a');
    expect(calls).toBe(3);
    of('b');
    expect(calls).toBe(4);
  });

  it('once full, keeps a new key only on its second sighting: a key seen once is computed for its caller and evicts nobody', () => {
    const map = new RecentMap<string>(4);
    let calls = 0;
    const of = (k: string) => map.of(k, () => (calls++, k.toUpperCase()));
    for (const k of ['a', 'b', 'c', 'd']) of(k);
    for (let i = 0; i < 500; i++) expect(of(`once${i}`)).toBe(`ONCE${i}`);
    expect(calls).toBe(504);
    for (const k of ['a', 'b', 'c', 'd']) of(k);
    expect(calls).toBe(504);
    of('e');
    of('e'); // kept now, in a's place (the oldest)
    expect(calls).toBe(506);
    of('e');
    expect(calls).toBe(506);
    expect(map.size).toBe(4);
    of('a');
    expect(calls).toBe(507);
  });
});
