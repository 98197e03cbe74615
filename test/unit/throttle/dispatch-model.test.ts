// Why the dispatcher is work-conserving and fair, shown on its model (src/throttle/dispatch.model.ts,
// held to the Lua by test/integration/throttle/dispatch-model.test.ts): run with no delivery time and
// no horizon, it is the ideal schedule. Exact counts, no clocks.
import { describe, expect, it } from 'vitest';
import { DispatchModel } from '../../../src/throttle/dispatch.model.js';

const S = 1_000_000; // µs per second

/** Runs the model from `t0` until nothing is queued; returns every start (lane, µs). */
function drain(model: DispatchModel, t0: number, arrivals: { at: number; lane: string; intervalUs: number }[] = []): { lane: string; t: number }[] {
  const starts: { lane: string; t: number }[] = [];
  const pending = [...arrivals].sort((a, b) => a.at - b.at);
  let now = t0;
  let job = 0;
  for (let guard = 0; guard < 1_000_000; guard++) {
    while (pending.length && pending[0]!.at <= now) {
      const a = pending.shift()!;
      model.admit(now, a.lane, `p-late-${job++}`, 1, 10_000, a.intervalUs, 0);
    }
    const r = model.dispatch(now, 0, 0, 1_000);
    for (const j of r.jobs) starts.push({ lane: j.laneId, t: j.startUs });
    const next = Math.min(r.nextUs > now ? r.nextUs : Infinity, pending.length ? pending[0]!.at : Infinity);
    if (next === Infinity) return starts;
    now = next;
  }
  throw new Error('did not drain');
}

function fill(model: DispatchModel, now: number, lane: string, jobs: number, intervalUs: number): void {
  for (let i = 0; i < jobs; i++) expect(model.admit(now, lane, `p${lane}-${i}`, 1, 10_000, intervalUs, 0).kind).toBe('admitted');
}

const count = (starts: { lane: string; t: number }[], lane: string, from: number, to: number) => starts.filter((s) => s.lane === lane && s.t >= from && s.t < to).length;

describe('the dispatcher, on its model', () => {
  it('is work-conserving: 200 busy lanes at 50/s under a cap of 200/s start 200 per second (less the margin), never more', () => {
    const model = new DispatchModel({ globalIntervalUs: S / 200, marginPpm: 0 });
    for (let k = 0; k < 200; k++) fill(model, 0, `k${k}`, 20, S / 50);
    const starts = drain(model, 0);
    expect(starts).toHaveLength(4_000);
    for (let second = 0; second < 20; second++) expect(starts.filter((s) => s.t >= second * S && s.t < (second + 1) * S)).toHaveLength(200);
  });

  it('is max-min fair: a lane that asks for less than its share gets all of it, the others split the rest', () => {
    // Cap 100/s, four lanes at 100/s: a share is 25/s. 'small' has only 10 jobs: all start within its
    // share's time (0.4 s), then the three big lanes split the cap: 33 or 34 each per second.
    const model = new DispatchModel({ globalIntervalUs: S / 100, marginPpm: 0 });
    for (const lane of ['a', 'b', 'c']) fill(model, 0, lane, 300, S / 100);
    fill(model, 0, 'small', 10, S / 100);
    const starts = drain(model, 0);
    expect(count(starts, 'small', 0, 0.4 * S)).toBe(10);
    for (let second = 1; second < 5; second++) {
      const perLane = ['a', 'b', 'c'].map((lane) => count(starts, lane, second * S, (second + 1) * S));
      expect(perLane.reduce((x, y) => x + y, 0)).toBe(100);
      for (const n of perLane) expect(n === 33 || n === 34).toBe(true);
    }
  });

  it('weights shares by the lanes rates (plans): a 100/s lane gets twice the share of a 50/s lane', () => {
    // Cap 60/s: 40/s and 20/s, to within the one start a window's edge can cut.
    const model = new DispatchModel({ globalIntervalUs: S / 60, marginPpm: 0 });
    fill(model, 0, 'pro', 300, S / 100);
    fill(model, 0, 'free', 300, S / 50);
    const starts = drain(model, 0);
    for (let second = 0; second < 4; second++) {
      expect(Math.abs(count(starts, 'pro', second * S, (second + 1) * S) - 40)).toBeLessThanOrEqual(1);
      expect(Math.abs(count(starts, 'free', second * S, (second + 1) * S) - 20)).toBeLessThanOrEqual(1);
    }
  });

  it("starts a light key's first job within one round of the busy lanes, not behind their backlogs", () => {
    // 100 busy lanes with 50 jobs each under a cap of 100/s: one round is one second.
    const model = new DispatchModel({ globalIntervalUs: S / 100, marginPpm: 0 });
    for (let k = 0; k < 100; k++) fill(model, 0, `busy${k}`, 50, S / 50);
    const starts = drain(model, 0, [{ at: 10 * S + 1, lane: 'light', intervalUs: S / 50 }]);
    const light = starts.find((s) => s.lane === 'light')!;
    expect(light.t - (10 * S + 1)).toBeLessThanOrEqual(S);
  });

  it('keeps each lane in FIFO order at its own spacing, with or without a cap', () => {
    for (const globalIntervalUs of [0, S / 30]) {
      const model = new DispatchModel({ globalIntervalUs, marginPpm: 10_000 });
      fill(model, 0, 'x', 20, S / 20);
      fill(model, 0, 'y', 20, S / 20);
      const r = model.dispatch(0, 10 * S, 0, 1_000);
      for (const lane of ['x', 'y']) {
        const mine = r.jobs.filter((j) => j.laneId === lane);
        expect(mine.map((j) => j.jobId)).toEqual(Array.from({ length: 20 }, (_, i) => `p${lane}-${i}`));
        for (let i = 1; i < mine.length; i++) expect(mine[i]!.startUs - mine[i - 1]!.startUs).toBeGreaterThanOrEqual(Math.floor((S / 20) * 1.01));
      }
    }
  });
});
