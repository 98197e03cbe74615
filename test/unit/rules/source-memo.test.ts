// SourceMemo: computes once per key, remembers undefined answers too, and forgets the least recently
// used key first when full.
import { describe, expect, it } from 'vitest';
import { SourceMemo } from '../../../src/rules/source-memo.js';

describe('SourceMemo', () => {
  it('computes a key once, an undefined answer included', () => {
    const memo = new SourceMemo(10);
    let calls = 0;
    const of = (k: string, v: string | undefined) => memo.of(k, () => (calls++, v));
    expect(of('a', 'A')).toBe('A');
    expect(of('a', 'other')).toBe('A');
    expect(of('none', undefined)).toBeUndefined();
    expect(of('none', 'late')).toBeUndefined();
    expect(calls).toBe(2);
  });

  it('keeps at most maxKeys, dropping the least recently used', () => {
    const memo = new SourceMemo(2);
    let calls = 0;
    const of = (k: string) => memo.of(k, () => (calls++, k.toUpperCase()));
    of('a');
    of('b');
    of('a'); // a is now the most recent
    of('c'); // first seen while full: computed, not kept
    expect(calls).toBe(3);
    of('c'); // seen again: kept, and b is dropped
    expect(memo.size).toBe(2);
    expect(calls).toBe(4);
    of('a');
    expect(calls).toBe(4);
    of('b');
    expect(calls).toBe(5);
    expect(() => new SourceMemo(0)).toThrow(RangeError);
  });
});
