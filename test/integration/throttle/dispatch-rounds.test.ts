// How often a dispatcher runs its rounds (src/throttle/dispatcher.ts). Under a cap of 1,000/s the next
// start enters the horizon a millisecond after the last one handed out, and the loop used to come back
// for each: rounds now keep a gap (a quarter of the horizon's time beyond the delivery time) unless the
// workers are behind; and the bound for workers that are behind takes a pattern of hand-backs (three
// within a second), not one late timer. Every process with a worker runs a dispatcher: one that finds
// the start it came for handed out by another follows (its rounds come three quarters of the spare time
// apart) until it finds one to hand out again, and takes over in time when the other stops. Real Redis:
// the rounds run the dispatch script on queued jobs.
import { describe, expect, it } from 'vitest';
import { Dispatcher } from '../../../src/throttle/dispatcher.js';
import type { LaneScripts } from '../../../src/throttle/lane-scripts.js';
import type { Throttle } from '../../../src/throttle/throttle.js';
import { useBackend } from '../../helpers/fixtures.js';

interface Round {
  at: number;
  bounded: boolean;
  /** The starts it handed out (Redis µs), once its reply came. */
  starts?: number[];
  /** Redis's now when it ran (µs), once its reply came. */
  nowUs?: number;
}

/** The throttle's lane scripts, recording each dispatch round's instant, whether it was bounded and what it handed out. */
function recording(throttle: Throttle, rounds: Round[]): LaneScripts {
  const lanes = throttle.gateLanes;
  const wrapped = Object.create(lanes) as LaneScripts;
  wrapped.dispatch = async (...args: Parameters<LaneScripts['dispatch']>) => {
    const round: Round = { at: performance.now(), bounded: args[2] !== undefined };
    rounds.push(round);
    const reply = await lanes.dispatch(...args);
    round.starts = reply.jobs.map((j) => j.startUs);
    round.nowUs = reply.nowUs;
    return reply;
  };
  return wrapped;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dispatch rounds', () => {
  const ctx = useBackend('single');

  /** A capped throttle with 400 jobs queued over 20 lanes (0.4 s of work at 1,000/s). */
  async function queued(name: string): Promise<Throttle> {
    const throttle = ctx.sluice.throttle(name, { ratePerSecond: 100, capacity: 100, globalRatePerSecond: 1000 });
    await Promise.all(Array.from({ length: 400 }, (_, i) => throttle.submit(`lane-${i % 20}`, { i })));
    return throttle;
  }

  /** Runs a dispatcher (no worker: never bounded) for `ms` and returns the gaps between its rounds after the first. */
  async function gaps(throttle: Throttle, deliveryUs: number | undefined, ms: number): Promise<number[]> {
    const rounds: Round[] = [];
    const dispatcher = new Dispatcher({ lanes: recording(throttle, rounds), keys: throttle.keys, client: ctx.sluice.redis, horizonUs: throttle.timing.leadUs, deliveryUs });
    dispatcher.acquire();
    await sleep(ms);
    await dispatcher.release();
    expect(rounds.every((r) => !r.bounded)).toBe(true);
    return rounds.slice(2).map((r, i) => r.at - rounds[i + 1]!.at);
  }

  it('under a cap of 1,000/s, rounds come a gap apart, not one per start or two', async () => {
    const throttle = await queued('gap');
    const timing = throttle.timing;
    const gapMs = (timing.leadUs - timing.deliveryUs) / 4 / 1000;
    expect(gapMs).toBe(3.75);
    const spaced = await gaps(throttle, timing.deliveryUs, 200);
    expect(spaced.length).toBeGreaterThan(5);
    // A timer counts from the event loop's cached time (whole ms, read when the turn began), so it can
    // fire up to ~1 ms early by performance.now(): CI saw 2.97 and 3.03 ms for a 3.75 ms gap. Without the
    // gap the shortest came 0.4-1.4 ms apart.
    expect(Math.min(...spaced)).toBeGreaterThanOrEqual(gapMs - 1.5);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    expect(median(spaced)).toBeGreaterThanOrEqual(gapMs - 0.5);
    // Without the delivery time the loop knows of no spare time, and comes back as each start enters the horizon.
    const unspaced = await gaps(await queued('nogap'), undefined, 200);
    expect(Math.min(...unspaced)).toBeLessThan(gapMs - 1.5);
  });

  it('one hand-back does not bound the rounds; three within a second do', async () => {
    const throttle = await queued('bound');
    const rounds: Round[] = [];
    const dispatcher = new Dispatcher({ lanes: recording(throttle, rounds), keys: throttle.keys, client: ctx.sluice.redis, horizonUs: throttle.timing.leadUs, deliveryUs: throttle.timing.deliveryUs });
    // A worker's dispatcher starts bounded for a second (its first rounds meet a backlog).
    dispatcher.acquire(true);
    try {
      await sleep(100);
      expect(rounds.length).toBeGreaterThan(0);
      expect(rounds.every((r) => r.bounded)).toBe(true);
      await sleep(1_050);
      const unbound = rounds.length;
      await sleep(50);
      expect(rounds.slice(unbound).every((r) => !r.bounded)).toBe(true);
      dispatcher.behind();
      const afterOne = rounds.length;
      await sleep(100);
      expect(rounds.length).toBeGreaterThan(afterOne);
      expect(rounds.slice(afterOne).every((r) => !r.bounded)).toBe(true);
      dispatcher.behind();
      dispatcher.behind();
      const afterThree = rounds.length;
      await sleep(100);
      expect(rounds.length).toBeGreaterThan(afterThree + 1);
      // The round in flight when the third came may be unbounded; every later one is bounded.
      expect(rounds.slice(afterThree + 1).every((r) => r.bounded)).toBe(true);
    } finally {
      await dispatcher.release(true);
    }
  });

  it('of two dispatchers one hands the starts out and the other follows; it takes over in time when the first stops', async () => {
    // 200/s under the cap: a start every 5 ms, more than the 3.75 ms gap, so each dispatcher came for every start.
    const throttle = ctx.sluice.throttle('follow', { ratePerSecond: 100, capacity: 100, globalRatePerSecond: 200 });
    await Promise.all(Array.from({ length: 300 }, (_, i) => throttle.submit(`lane-${i % 20}`, { i })));
    const made = (rounds: Round[]) => new Dispatcher({ lanes: recording(throttle, rounds), keys: throttle.keys, client: ctx.sluice.redis, horizonUs: throttle.timing.leadUs, deliveryUs: throttle.timing.deliveryUs });
    const first: Round[] = [];
    const second: Round[] = [];
    const a = made(first);
    const b = made(second);
    a.acquire();
    b.acquire();
    await sleep(600);
    await a.release();
    const together = [...first, ...second].filter((r) => r.starts !== undefined);
    const handedTogether = together.reduce((n, r) => n + r.starts!.length, 0);
    await sleep(500);
    await b.release();
    expect(handedTogether).toBeGreaterThan(80);
    // Both came for every start before (2 rounds or more a start); a follower comes about every 11 ms.
    expect(together.length).toBeLessThan(1.6 * handedTogether);
    const after = second.filter((r) => r.at > first.at(-1)!.at + 20);
    expect(after.reduce((n, r) => n + (r.starts?.length ?? 0), 0)).toBeGreaterThan(60);
    // The cap's slots stay back to back across the stop: consecutive starts one global interval apart
    // (5 ms and the 1 % pacing margin), never more (a slot lost) nor less (over the cap).
    const starts = [...first, ...second].flatMap((r) => r.starts ?? []).sort((x, y) => x - y);
    const spanUs = 5_050;
    const steps = starts.slice(1).map((s, i) => s - starts[i]!);
    expect(Math.min(...steps)).toBeGreaterThanOrEqual(spanUs - 1);
    // A longer step comes only from a round that ran late (a timer fired late on a loaded machine, which a
    // dispatcher alone does too): its start is then that round's own now plus the delivery time. A slot
    // lost in the handover would be a start the meter put later than that.
    const roundNow = new Map([...first, ...second].flatMap((r) => (r.starts ?? []).map((s) => [s, r.nowUs!] as const)));
    const long = starts.slice(1).filter((s, i) => s - starts[i]! > spanUs + 1);
    for (const s of long) expect(s - roundNow.get(s)!).toBeLessThanOrEqual(throttle.timing.deliveryUs + 1);
  });
});
