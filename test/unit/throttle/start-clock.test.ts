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

  it('releases past instants at once, in their order, after the earlier ones still waiting', async () => {
    const now = performance.now();
    const order: string[] = [];
    const waits = [untilStart(now - 1).then(() => order.push('b')), untilStart(now - 2).then(() => order.push('a')), untilStart(now + 3).then(() => order.push('c'))];
    await Promise.all(waits);
    // 'b' came first and its instant was past: released at once; 'a' then; 'c' at its instant.
    expect(order).toEqual(['b', 'a', 'c']);
  });
});
