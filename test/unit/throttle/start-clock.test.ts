// The process's start clock (src/throttle/start-clock.ts): waiters are released in the order of their
// instants (not of their arrival), never before their instant, and at once (in order) when it is past.
import { describe, expect, it } from 'vitest';
import { startWaiters, untilStart } from '../../../src/throttle/start-clock.js';

describe('untilStart', () => {
  it('releases instants microseconds apart in their order, whatever the order they came in', async () => {
    const base = performance.now() + 4;
    const offsets = [0.03, 0.0, 0.02, 0.01, 0.05, 0.04];
    const order: number[] = [];
    await Promise.all(offsets.map((o) => untilStart(base + o).then(() => order.push(o))));
    expect(order).toEqual([...offsets].sort((a, b) => a - b));
    expect(startWaiters()).toBe(0);
  });

  it('never releases a waiter before its instant', async () => {
    const late: number[] = [];
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => {
        const at = performance.now() + 1 + (i % 8) * 0.7;
        return untilStart(at).then(() => late.push(performance.now() - at));
      }),
    );
    expect(late).toHaveLength(40);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(0);
  });

  it('releases past instants that come in one turn in their order, before the later ones', async () => {
    const now = performance.now();
    const order: string[] = [];
    const waits = [untilStart(now - 1).then(() => order.push('b')), untilStart(now - 2).then(() => order.push('a')), untilStart(now + 3).then(() => order.push('c'))];
    // Not released within the turn they came in (the jobs one reply moves come one after the other).
    await Promise.resolve();
    expect(order).toEqual([]);
    await Promise.all(waits);
    // 'b' came first, but 'a''s instant is earlier: both past, released in their order; 'c' at its instant.
    expect(order).toEqual(['a', 'b', 'c']);
  });

  it('releases a past instant in the order of its instant among waiters that came later in the same turn', async () => {
    const now = performance.now();
    const order: string[] = [];
    // As a moved job (its new instant past when the reply was read) comes before the late job that moved it.
    const moved = untilStart(now - 0.5).then(() => order.push('moved'));
    await Promise.resolve();
    const lateJob = untilStart(now - 0.6).then(() => order.push('late'));
    await Promise.all([moved, lateJob]);
    expect(order).toEqual(['late', 'moved']);
    expect(startWaiters()).toBe(0);
  });
});
