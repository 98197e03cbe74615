// Doorkeeper: the admission filter of the full per-key caches (src/request/doorkeeper.ts). A key is let
// in on its second sighting while its fingerprint holds its slot; never on its first (but for a
// fingerprint of 0, the empty slot's value, or a collision); long keys are fingerprinted by their ends
// and length.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Doorkeeper, fingerprint } from '../../../src/cache/doorkeeper.js';

describe('Doorkeeper', () => {
  it('lets a key in on its second sighting, not its first', () => {
    const door = new Doorkeeper(10_000);
    expect(door.admits('10.0.0.1')).toBe(false);
    expect(door.admits('10.0.0.1')).toBe(true);
    expect(door.admits('10.0.0.2')).toBe(false);
  });

  it('turns away nearly every key of a stream of distinct keys (only collisions get in)', () => {
    const door = new Doorkeeper(4_096);
    let admitted = 0;
    for (let i = 0; i < 100_000; i++) if (door.admits(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`)) admitted++;
    // A collision needs the same slot and the same 32-bit fingerprint: about 100,000 / 2^32 here.
    expect(admitted).toBeLessThan(5);
  });

  it('lets in a key that comes back while few other keys came between', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 20 }), fc.integer({ min: 0, max: 20 }), (base, between) => {
        const door = new Doorkeeper(4_096);
        door.admits(`key-${base}`);
        for (let i = 1; i <= between; i++) door.admits(`key-${base + i}`);
        // 20 other keys in 4,096 slots: the key's slot was taken over in under 1 % of the runs.
        return door.admits(`key-${base}`) || sharesSlot(`key-${base}`, between, base);
      }),
    );
  });

  it('tells long keys apart by their ends and their length', () => {
    const middle = 'x'.repeat(200);
    expect(fingerprint(`a${middle}b`)).not.toBe(fingerprint(`c${middle}b`));
    expect(fingerprint(`a${middle}b`)).not.toBe(fingerprint(`a${middle}c`));
    expect(fingerprint(`a${middle}b`)).not.toBe(fingerprint(`a${middle}xb`));
    // Only the middle of a key over 64 characters goes unread.
    expect(fingerprint(`${'p'.repeat(40)}1${'q'.repeat(40)}`)).toBe(fingerprint(`${'p'.repeat(40)}2${'q'.repeat(40)}`));
  });
});

/** True when one of the keys between took `key`'s slot (a fresh table replays the sequence to tell). */
function sharesSlot(key: string, between: number, base: number): boolean {
  const slotOf = (k: string) => (Math.imul(fingerprint(k), 0x9e3779b1) >>> 10) & 4095;
  for (let i = 1; i <= between; i++) if (slotOf(`key-${base + i}`) === slotOf(key)) return true;
  return false;
}
