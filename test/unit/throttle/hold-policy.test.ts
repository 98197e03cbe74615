// How many jobs a worker process takes (src/throttle/hold-policy.ts), on an injected clock: only as many as
// its handlers from its start and after a saturation, back to holding once the handlers are shown to be far
// from busy, and not on a misreading (the first jobs waiting for their instants, jobs that went back).
import { describe, expect, it } from 'vitest';
import { HoldPolicy } from '../../../src/throttle/hold-policy.js';

function policy(handlers = 4, hold = 100) {
  let now = 0;
  const limits: number[] = [];
  const p = new HoldPolicy(handlers, hold, (limit) => limits.push(limit), () => now);
  return { p, limits, advance: (ms: number) => void (now += ms) };
}

/** Takes a job, waits `waitMs` for its instant, runs its handler `runMs`, and finishes it. */
function job(t: ReturnType<typeof policy>, waitMs: number, runMs: number) {
  t.p.taken();
  t.advance(waitMs);
  t.p.handlerStarted();
  t.advance(runMs);
  t.p.handlerEnded();
  t.p.finished();
}

describe('HoldPolicy', () => {
  it('starts taking only as many jobs as it has handlers', () => {
    const t = policy(4, 100);
    expect(t.p.isStrict).toBe(true);
    expect(t.limits).toEqual([4]);
  });

  it('holds again once the limit binds while fast handlers wait for their instants', () => {
    const t = policy(4, 100);
    // Twenty jobs each waiting ~2 ms for its instant, handlers of 0.1 ms: far from busy.
    for (let i = 0; i < 20; i++) job(t, 2, 0.1);
    expect(t.p.isStrict).toBe(true); // the limit never bound: one job at a time
    for (let i = 0; i < 4; i++) t.p.taken();
    expect(t.p.isStrict).toBe(false);
    expect(t.limits).toEqual([4, 104]);
  });

  it('stays strict while the handlers are busy, and goes back to it when a job meets them all busy', () => {
    const t = policy(2, 100);
    // Two handlers of 30 ms, each taken as the other ends: busy all the time.
    for (let i = 0; i < 10; i++) {
      t.p.taken();
      t.p.taken();
      t.p.handlerStarted();
      t.p.handlerStarted();
      t.advance(30);
      t.p.handlerEnded();
      t.p.handlerEnded();
      t.p.finished();
      t.p.finished();
    }
    t.p.taken();
    t.p.taken();
    expect(t.p.isStrict).toBe(true);
    t.p.finished();
    t.p.finished();
    // Made to hold (fast handlers), then a job comes to its instant with none free.
    for (let i = 0; i < 20; i++) job(t, 2, 0.1);
    t.p.taken();
    t.p.taken();
    expect(t.p.isStrict).toBe(false);
    t.p.saturated();
    expect(t.p.isStrict).toBe(true);
    expect(t.limits).toEqual([2, 102, 2]);
  });

  it('does not take the first jobs, waiting for their instants with no handler run yet, for idle handlers', () => {
    const t = policy(5, 100);
    // Five jobs taken at once, 40 ms before their instants: the limit binds, no handler has ended.
    for (let i = 0; i < 5; i++) t.p.taken();
    t.advance(40);
    t.p.finished();
    t.p.taken();
    expect(t.p.isStrict).toBe(true);
  });

  it('does not take jobs that came late and went back (no handler ran) for idle handlers', () => {
    const t = policy(1, 100);
    for (let i = 0; i < 20; i++) {
      t.p.taken();
      t.advance(5);
      t.p.finished();
    }
    t.p.taken();
    expect(t.p.isStrict).toBe(true);
  });

  it('does not relax on handlers busy half the time or more', () => {
    const t = policy(1, 100);
    // One handler: 30 ms runs, 5 ms between them (the next job's fresh start): busy 6/7 of the time.
    for (let i = 0; i < 20; i++) job(t, 5, 30);
    t.p.taken();
    expect(t.p.isStrict).toBe(true);
  });
});
