// The shared deadline timer (src/redis/deadline.ts, docs/decisions/shared-deadline-timer.md): every call
// expires at its own deadline, a settled call never does, an idle list keeps no process alive, and a
// timer left armed by a call that settled early never makes a later call expire early or late. In the
// timing project (run alone, after the main one): its upper bounds are what catch a late expiry.
import { afterEach, describe, expect, it } from 'vitest';
import { Deadline } from '../../../src/redis/deadline.js';

class Probe extends Deadline {
  expiredAt: number | undefined;
  constructor(
    ms: number,
    private readonly onExpire?: () => void,
  ) {
    super();
    this.start(ms);
  }
  protected expire(): void {
    this.expiredAt = performance.now();
    this.onExpire?.();
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Timers that keep the process alive. */
const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
const started: Probe[] = [];
const probe = (ms: number, onExpire?: () => void) => {
  const p = new Probe(ms, onExpire);
  started.push(p);
  return p;
};

afterEach(() => {
  for (const p of started.splice(0)) p.settle();
});

describe('shared deadline timer', () => {
  it('expires a call at its deadline and never one that settled', async () => {
    const t0 = performance.now();
    const a = probe(60);
    const b = probe(60);
    expect(b.settle()).toBe(true);
    await sleep(120);
    expect(a.expiredAt! - t0).toBeGreaterThanOrEqual(59);
    expect(a.pending).toBe(false);
    expect(b.expiredAt).toBeUndefined();
    expect(b.settle()).toBe(false);
  });

  it('keeps no process alive once no call is pending, and holds it while one is', async () => {
    const base = refTimers();
    const a = probe(77);
    expect(refTimers()).toBe(base + 1);
    a.settle();
    expect(refTimers()).toBe(base);
    const b = probe(77);
    expect(refTimers()).toBe(base + 1);
    b.settle();
    expect(refTimers()).toBe(base);
  });

  it('a call started after an earlier one settled expires at its own deadline, not the earlier one’s', async () => {
    const first = probe(100);
    await sleep(10);
    first.settle(); // its timer stays armed for ~100 ms after the start, not keeping the process alive
    await sleep(40);
    const t1 = performance.now();
    const second = probe(100);
    await sleep(70); // the first's timer has fired by now (~100 ms): the second is not due
    expect(second.expiredAt).toBeUndefined();
    await sleep(80);
    expect(second.expiredAt! - t1).toBeGreaterThanOrEqual(99);
    expect(second.expiredAt! - t1).toBeLessThan(140);
  });

  it('a call started by an expiry does not push back the deadline of one already waiting', async () => {
    const t0 = performance.now();
    let third: Probe | undefined;
    probe(80, () => {
      third = probe(80);
    });
    await sleep(30);
    const second = probe(80);
    await sleep(150);
    expect(second.expiredAt! - t0).toBeGreaterThanOrEqual(109);
    // Before the fix it waited for the timer armed by `third` (80 ms after the first expiry: ~160 ms).
    expect(second.expiredAt! - t0).toBeLessThan(150);
    // The call started by the expiry keeps its own deadline (80 ms after the first one's).
    await sleep(40);
    expect(third!.expiredAt! - t0).toBeGreaterThanOrEqual(159);
  });
});
