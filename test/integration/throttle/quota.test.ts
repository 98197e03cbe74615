// Spend quotas (issue 11, item 5): calls or cost per calendar day or month, per key or per queue,
// counted where starts are decided (the dispatch script). Injected times on real Redis, single node and
// a 3-master cluster: a window never starts more than its limit; a refusing quota answers with the exact
// time until its window resets; a deferring one admits and starts the work in the next window; a job
// sent back before its call gives its units back, one whose call was made keeps them.
import { describe, expect, it } from 'vitest';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';
import { quotaWindows, type QuotaInput } from '../../../src/throttle/quota.js';

let run = 0;
/** 2027-01-15T08:00:00Z in µs. */
const T0 = 1_800_000_000_000_000;
const at = (us: number) => String(T0 + us);
const day = quotaWindows({ period: 'day', timeZone: 'UTC' }, T0 / 1000);
/** µs from T0 to the end of T0's UTC day. */
const TO_MIDNIGHT = day.endMs * 1000 - T0;

describe.each(TOPOLOGIES)('spend quotas, %s Redis', (topology) => {
  const ctx = useBackend(topology);
  const make = (quotas: QuotaInput[], extra: Record<string, unknown> = {}) =>
    ctx.sluice.throttle(`quota${run++}`, { ratePerSecond: 1000, capacity: 10, quotas, ...extra });

  it('a refusing key quota admits what fits its window and refuses the rest until the reset', async () => {
    const throttle = make([{ scope: 'key', period: 'day', limit: 3 }]);
    const lanes = throttle.gateLanes;
    for (const id of ['p1', 'p2', 'p3']) expect((await lanes.admit('a', id, 1, false, at(0))).kind).toBe('admitted');
    // Three queued jobs speak for the whole window: the fourth is refused until midnight, exactly.
    expect(await lanes.admit('a', 'p4', 1, false, at(1_000))).toMatchObject({ kind: 'quota_exhausted', retryUs: TO_MIDNIGHT - 1_000, quota: 0 });
    // Another key has its own quota.
    expect((await lanes.admit('b', 'p5', 1, false, at(1_000))).kind).toBe('admitted');
    const round = await lanes.dispatch(100, at(2_000));
    expect(round.jobs.map((j) => j.jobId).sort()).toEqual(['p1', 'p2', 'p3', 'p5']);
    const use = await throttle.quotaUse('a', T0 / 1000 + 3);
    expect(use).toEqual([{ scope: 'key', period: 'day', unit: 'calls', limit: 3, used: 3, resetsAtMs: day.endMs, timeZone: 'UTC' }]);
    // Started, still counted: refused until midnight, admitted after it.
    expect((await lanes.admit('a', 'p6', 1, false, at(TO_MIDNIGHT - 1))).kind).toBe('quota_exhausted');
    expect((await lanes.admit('a', 'p6', 1, false, at(TO_MIDNIGHT))).kind).toBe('admitted');
  });

  it('a deferring key quota admits everything and starts the surplus in the next window', async () => {
    const throttle = make([{ scope: 'key', period: 'day', limit: 2, whenExhausted: 'defer' }]);
    const lanes = throttle.gateLanes;
    const replies = [];
    for (const id of ['p1', 'p2', 'p3', 'p4']) replies.push(await lanes.admit('a', id, 1, false, at(0)));
    expect(replies.map((r) => r.kind)).toEqual(['admitted', 'admitted', 'admitted', 'admitted']);
    // The third is predicted in the next window.
    expect(replies[2]).toMatchObject({ startUs: T0 + TO_MIDNIGHT });
    const first = await lanes.dispatch(100, at(1_000));
    expect(first.jobs.map((j) => j.jobId)).toEqual(['p1', 'p2']);
    // Nothing more before midnight, however often the dispatcher asks.
    expect((await lanes.dispatch(100, at(5_000_000))).jobs).toEqual([]);
    expect((await lanes.dispatch(100, at(TO_MIDNIGHT - 60_000_000))).jobs).toEqual([]);
    // From midnight on: the rest, at their lane's rate.
    const next = await lanes.dispatch(100, at(TO_MIDNIGHT - 1_000));
    expect(next.jobs.map((j) => j.jobId)).toEqual(['p3', 'p4']);
    // The first at midnight or as soon as the job can be delivered, whichever is later.
    expect(next.jobs[0]!.startUs).toBe(T0 + TO_MIDNIGHT - 1_000 + throttle.timing.deliveryUs);
    // Asked ahead of midnight (within the horizon), the first start is midnight exactly.
    expect((await lanes.admit('b', 'p7', 1, false, at(0))).kind).toBe('admitted');
    expect((await lanes.admit('b', 'p8', 1, false, at(0))).kind).toBe('admitted');
    expect((await lanes.admit('b', 'p9', 1, false, at(0))).kind).toBe('admitted');
    expect((await lanes.dispatch(100, at(2_000))).jobs.map((j) => j.jobId)).toEqual(['p7', 'p8']);
    const ahead = await lanes.dispatch(100, at(TO_MIDNIGHT - throttle.timing.leadUs + 1_000));
    expect(ahead.jobs).toEqual([{ jobId: 'p9', laneId: 'b', startUs: T0 + TO_MIDNIGHT }]);
    expect((await throttle.quotaUse('a', day.endMs + 1))[0]).toMatchObject({ used: 2, resetsAtMs: day.endMs + 86_400_000 });
  });

  it('a queue quota of cost units holds every start at its limit until the reset', async () => {
    const throttle = make([{ scope: 'queue', period: 'day', unit: 'cost', limit: 10, whenExhausted: 'defer' }]);
    const lanes = throttle.gateLanes;
    for (const [lane, id] of [['a', 'p1'], ['b', 'p2'], ['c', 'p3']] as const) expect((await lanes.admit(lane, id, 4, false, at(0))).kind).toBe('admitted');
    const round = await lanes.dispatch(100, at(1_000));
    // 4 + 4 fit in 10, a third 4 does not: the dispatcher is told to come back at midnight.
    expect(round.jobs).toHaveLength(2);
    expect(round.nextUs).toBe(T0 + TO_MIDNIGHT);
    expect((await throttle.quotaUse(undefined, T0 / 1000 + 2))[0]).toMatchObject({ scope: 'queue', unit: 'cost', used: 8 });
    // A job of 2 still fits, but it waits behind the lane the quota holds (starts keep their order).
    expect((await lanes.admit('d', 'p4', 2, false, at(2_000))).kind).toBe('admitted');
    expect((await lanes.dispatch(100, at(3_000))).jobs).toEqual([]);
    const after = await lanes.dispatch(100, at(TO_MIDNIGHT));
    expect(after.jobs.map((j) => j.jobId).sort()).toEqual(['p3', 'p4']);
  });

  it('a refusing queue quota refuses once its window is used up', async () => {
    const throttle = make([{ scope: 'queue', period: 'day', limit: 2 }]);
    const lanes = throttle.gateLanes;
    expect((await lanes.admit('a', 'p1', 1, false, at(0))).kind).toBe('admitted');
    expect((await lanes.admit('b', 'p2', 1, false, at(0))).kind).toBe('admitted');
    expect((await lanes.dispatch(100, at(1_000))).jobs).toHaveLength(2);
    expect(await lanes.admit('c', 'p3', 1, false, at(20_000))).toMatchObject({ kind: 'quota_exhausted', retryUs: TO_MIDNIGHT - 20_000 });
  });

  it('a job sent back before its call gives its units back; one whose call was made keeps them', async () => {
    const throttle = make([{ scope: 'key', period: 'day', limit: 1, whenExhausted: 'defer' }]);
    const lanes = throttle.gateLanes;
    expect((await lanes.admit('a', 'p1', 1, false, at(0))).kind).toBe('admitted');
    const [j1] = (await lanes.dispatch(100, at(0))).jobs;
    expect((await throttle.quotaUse('a', T0 / 1000))[0]!.used).toBe(1);
    // Sent back (late, paused, LateSend): no call was made.
    await lanes.start('a', 'p1', 1, { mode: 'requeue', slotUs: j1!.startUs }, at(20_000));
    expect((await throttle.quotaUse('a', T0 / 1000 + 20))[0]!.used).toBe(0);
    const [again] = (await lanes.dispatch(100, at(30_000))).jobs;
    expect(again!.jobId).toBe('p1');
    expect(await lanes.start('a', 'p1', 1, { mode: 'start' }, String(again!.startUs))).toMatchObject({ go: true });
    // Its call was made and the upstream said "later": it counts, so its second run waits for midnight.
    await lanes.start('a', 'p1', 1, { mode: 'requeue', slotUs: again!.startUs, callMade: true }, at(60_000));
    expect((await throttle.quotaUse('a', T0 / 1000 + 60))[0]!.used).toBe(1);
    expect((await lanes.dispatch(100, at(70_000))).jobs).toEqual([]);
    // The lane says so: its next start is the reset (it said "now" before stop 25).
    expect((await throttle.lane('a', { nowMs: T0 / 1000 + 80 })).nextStartAtMs).toBe(day.endMs);
    expect((await lanes.dispatch(100, at(TO_MIDNIGHT))).jobs.map((j) => j.jobId)).toEqual(['p1']);
  });

  it('a late start is not moved across a reset: it goes back and counts in the new window', async () => {
    const throttle = make([{ scope: 'key', period: 'day', limit: 1, whenExhausted: 'defer' }]);
    const lanes = throttle.gateLanes;
    const before = TO_MIDNIGHT - 30_000;
    expect((await lanes.admit('a', 'p1', 1, false, at(before))).kind).toBe('admitted');
    const [j1] = (await lanes.dispatch(100, at(before))).jobs;
    expect(j1!.startUs).toBeLessThan(T0 + TO_MIDNIGHT);
    // It reaches its worker 40 ms late, past midnight: no fresh start in the new window on the old count.
    expect(await lanes.start('a', 'p1', 1, { mode: 'late', heldUs: j1!.startUs }, String(j1!.startUs + 40_000))).toMatchObject({ go: false, slotUs: j1!.startUs });
    await lanes.start('a', 'p1', 1, { mode: 'requeue', slotUs: j1!.startUs }, String(j1!.startUs + 41_000));
    expect((await throttle.quotaUse('a', day.endMs - 1))[0]!.used).toBe(0);
    const [again] = (await lanes.dispatch(100, String(j1!.startUs + 42_000))).jobs;
    expect(again!.jobId).toBe('p1');
    expect((await throttle.quotaUse('a', day.endMs + 50))[0]!.used).toBe(1);
  });

  it("a cost quota counts a job's actual cost once it is reconciled", async () => {
    const throttle = make([
      { scope: 'key', period: 'day', unit: 'cost', limit: 20, whenExhausted: 'defer' },
      { scope: 'queue', period: 'day', unit: 'calls', limit: 100 },
    ]);
    const lanes = throttle.gateLanes;
    expect((await lanes.admit('a', 'p1', 5, false, at(0))).kind).toBe('admitted');
    const [j1] = (await lanes.dispatch(100, at(0))).jobs;
    expect(await lanes.start('a', 'p1', 5, { mode: 'start' }, String(j1!.startUs))).toMatchObject({ go: true });
    expect(await lanes.started('a', 'p1', 5, j1!.startUs)).toBe(true);
    // Estimated 5, cost 12.5: the cost quota follows, the calls quota does not move.
    await lanes.reconcile('a', 7.5, at(20_000), j1!.startUs);
    const use = await throttle.quotaUse('a', T0 / 1000 + 20);
    expect(use.map((u) => u.used)).toEqual([12.5, 1]);
    // 7.5 left: a job of 8 waits for the next window, one of 7 would not.
    expect((await lanes.admit('a', 'p2', 8, false, at(30_000))).kind).toBe('admitted');
    expect((await lanes.dispatch(100, at(40_000))).jobs).toEqual([]);
    // A refund larger than the count leaves it at zero, never below.
    await lanes.reconcile('a', -50, at(50_000), j1!.startUs);
    expect((await throttle.quotaUse('a', T0 / 1000 + 50))[0]!.used).toBe(0);
  });

  it('lane status shows each quota in its time zone', async () => {
    const throttle = make([
      { scope: 'key', period: 'day', limit: 5, timeZone: 'Asia/Tokyo' },
      { scope: 'queue', period: 'month', limit: 100, timeZone: 'America/New_York' },
    ]);
    expect((await throttle.gateLanes.admit('a', 'p1', 1, false, at(0))).kind).toBe('admitted');
    await throttle.gateLanes.dispatch(100, at(0));
    const info = await throttle.lane('a', { nowMs: T0 / 1000 + 1 });
    expect(info.quotas).toEqual([
      // 2027-01-15 17:00 in Tokyo: the day ends at 2027-01-16T00:00+09:00.
      { scope: 'key', period: 'day', unit: 'calls', limit: 5, used: 1, resetsAtMs: Date.parse('2027-01-15T15:00:00Z'), timeZone: 'Asia/Tokyo' },
      // January in New York ends at 2027-02-01T00:00-05:00.
      { scope: 'queue', period: 'month', unit: 'calls', limit: 100, used: 1, resetsAtMs: Date.parse('2027-02-01T05:00:00Z'), timeZone: 'America/New_York' },
    ]);
  });
});
