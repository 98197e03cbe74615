// The held-starts registry (src/throttle/held-starts.ts) alone: which jobs a late call names, that they
// wait for its reply, that a shift moves only those at or after the missed start, one late call of a
// lane at a time, and none at all named beyond the most one call moves.
import { describe, expect, it } from 'vitest';
import { HeldStart, HeldStarts } from '../../../src/throttle/held-starts.js';

/** A job of lane `lane` held with start `startUs` (undefined: still asking). */
function held(registry: HeldStarts, member: string, startUs: number | undefined, lane = 'k'): HeldStart {
  const h = new HeldStart(lane, member);
  h.startUs = startUs;
  registry.hold(h);
  return h;
}

describe('held starts', () => {
  it('names the lane’s other jobs held at or after the missed start and those still asking; a shift moves those it should', async () => {
    const r = new HeldStarts();
    const late = held(r, 'a|1', 100);
    const earlier = held(r, 'e|1', 50);
    const later = held(r, 'b|1', 110);
    const same = held(r, 's|1', 100);
    const asking = held(r, 'c|1', undefined);
    held(r, 'x|1', 200, 'other');
    let named: readonly string[] = [];
    const reply = await r.lateCall(late, 64, async (n) => {
      named = n;
      // While the call is out, the named jobs wait for it; the earlier one does not.
      expect(later.moving).toBeInstanceOf(Promise);
      expect(same.moving).toBeInstanceOf(Promise);
      expect(asking.moving).toBeInstanceOf(Promise);
      expect(earlier.moving).toBeUndefined();
      // The asking job's answer (its start before the move) comes back before the late call's.
      asking.startUs = 120;
      return { go: true, startUs: 300, shiftUs: 200 };
    });
    expect(reply).toEqual({ go: true, startUs: 300, shiftUs: 200 });
    expect([...named].sort()).toEqual(['b|1', 'c|1', 's|1']);
    expect([later.startUs, same.startUs, asking.startUs, earlier.startUs]).toEqual([310, 300, 320, 50]);
    expect([later.moving, same.moving, asking.moving]).toEqual([undefined, undefined, undefined]);
  });

  it('without a shift (the job went behind, or back) moves none; an asking job still without a start is left alone', async () => {
    const r = new HeldStarts();
    const late = held(r, 'a|1', 100);
    const later = held(r, 'b|1', 110);
    const asking = held(r, 'c|1', undefined);
    expect(await r.lateCall(late, 64, async () => ({ go: true, startUs: 400 }))).toEqual({ go: true, startUs: 400 });
    expect(later.startUs).toBe(110);
    expect(await r.lateCall(late, 64, async () => ({ go: true, startUs: 500, shiftUs: 400 }))).toMatchObject({ shiftUs: 400 });
    expect(asking.startUs).toBeUndefined();
  });

  it('makes one late call of a lane at a time: a second waits, and is told "moved" when the first moved it', async () => {
    const r = new HeldStarts();
    const first = held(r, 'a|1', 100);
    const second = held(r, 'b|1', 110);
    const third = held(r, 'c|1', 90);
    let release!: () => void;
    const out = r.lateCall(first, 64, () => new Promise<{ go: boolean; shiftUs?: number }>((resolve) => (release = () => resolve({ go: true, shiftUs: 50 }))));
    const calls: string[] = [];
    // The second was named by the first: moved meanwhile, it makes no call.
    const secondCall = r.lateCall(second, 64, async () => {
      calls.push('second');
      return { go: true };
    });
    // The third (earlier than the first's start) was not: it makes its call once the first's is back.
    const thirdCall = r.lateCall(third, 64, async (named) => {
      calls.push(`third ${[...named].sort().join(',')}`);
      return { go: true };
    });
    await Promise.resolve();
    expect(calls).toEqual([]);
    release();
    await out;
    expect(await secondCall).toBe('moved');
    expect(second.startUs).toBe(160);
    await thirdCall;
    expect(calls).toEqual(['third a|1,b|1']);
  });

  it('beyond the most one call moves, names none and does not wait its turn', async () => {
    const r = new HeldStarts();
    const late = held(r, 'a|1', 100);
    held(r, 'b|1', 110);
    held(r, 'c|1', 60);
    held(r, 'd|1', 70);
    // A names b alone (one, within the most of two): its call is the lane's one call out.
    let release!: () => void;
    let namedFirst: readonly string[] | undefined;
    const out = r.lateCall(late, 2, (n) => {
      namedFirst = n;
      return new Promise<{ go: boolean }>((resolve) => (release = () => resolve({ go: true })));
    });
    expect(namedFirst).toEqual(['b|1']);
    // Z would name four: it names none and goes at once, beside A's call still out.
    let named: readonly string[] | undefined;
    await r.lateCall(held(r, 'z|1', 50), 2, async (n) => {
      named = n;
      return { go: true };
    });
    expect(named).toEqual([]);
    release();
    await out;
  });

  it('a failed call lets the named jobs go on at their starts, and the lane take its next late call', async () => {
    const r = new HeldStarts();
    const late = held(r, 'a|1', 100);
    const later = held(r, 'b|1', 110);
    await expect(r.lateCall(late, 64, async () => Promise.reject(new Error('connection lost')))).rejects.toThrow('connection lost');
    expect(later.moving).toBeUndefined();
    expect(later.startUs).toBe(110);
    expect(await r.lateCall(late, 64, async () => ({ go: false }))).toEqual({ go: false });
    r.drop(late);
    r.drop(later);
    expect(await r.lateCall(held(r, 'q|1', 1), 64, async (n) => ({ go: true, n }))).toEqual({ go: true, n: [] });
  });
});
