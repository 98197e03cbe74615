// Cost reconciliation (issue 11, item 4): a job admitted with an estimated cost reports its actual cost
// after it ran; the difference is charged to (or refunded from) its lane's meter and the global meter.
// A charge delays the next starts by exactly the extra units; a refund brings them forward, but never
// before now nor closer than an interval to a start already handed out. Injected times on real Redis;
// the same operations are in the property test against the model (dispatch-model.test.ts).
import { describe, expect, it } from 'vitest';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

let run = 0;
const T0 = 1_800_000_000_000_000;
const at = (us: number) => String(T0 + us);
/** `units` lane intervals of `intervalUs` with the 1% pacing margin. */
const spanOf = (units: number, intervalUs: number) => Math.floor((units * intervalUs * 1_010_000) / 1_000_000);

describe.each(TOPOLOGIES)('cost reconciliation, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  it('an extra charge delays the lane by the extra units', async () => {
    const throttle = ctx.sluice.throttle(`rc${run++}`, { ratePerSecond: 10, capacity: 5 });
    const lanes = throttle.gateLanes;
    expect((await lanes.admit('k', 'p1', 1, false, at(0))).kind).toBe('admitted');
    const [j1] = (await lanes.dispatch(10, at(0))).jobs;
    expect(await lanes.start('k', 'p1', 1, { mode: 'start' }, String(j1!.startUs))).toMatchObject({ go: true });
    // It cost 3, not 1: two more intervals.
    const after = await lanes.reconcile('k', 2, at(20_000));
    expect(after.laneUs).toBe(j1!.startUs + spanOf(1, 100_000) + spanOf(2, 100_000));
    expect(after.globalUs).toBe(0);
    const next = await lanes.admit('k', 'p2', 1, false, at(30_000));
    expect(next).toMatchObject({ kind: 'admitted', startUs: after.laneUs });
  });

  it('a refund brings the next start forward, never before now', async () => {
    const throttle = ctx.sluice.throttle(`rc${run++}`, { ratePerSecond: 10, capacity: 5 });
    const lanes = throttle.gateLanes;
    expect((await lanes.admit('k', 'p1', 4, false, at(0))).kind).toBe('admitted');
    expect((await lanes.admit('k', 'p2', 1, false, at(0))).kind).toBe('admitted');
    const [j1] = (await lanes.dispatch(10, at(0))).jobs;
    expect(j1!.jobId).toBe('p1');
    expect(await lanes.start('k', 'p1', 4, { mode: 'start' }, String(j1!.startUs))).toMatchObject({ go: true });
    // Estimated 4, cost 1: three intervals back.
    const after = await lanes.reconcile('k', -3, at(20_000));
    expect(after.laneUs).toBe(j1!.startUs + spanOf(4, 100_000) - spanOf(3, 100_000));
    // A refund larger than what is ahead stops at now: p2 (queued, not handed out) may start at once.
    const again = await lanes.reconcile('k', -100, at(30_000));
    expect(again.laneUs).toBe(T0 + 30_000);
    const round = await lanes.dispatch(10, at(30_000));
    expect(round.jobs).toEqual([{ jobId: 'p2', laneId: 'k', startUs: T0 + 30_000 + throttle.timing.deliveryUs }]);
  });

  it('a refund never crowds a start already handed out', async () => {
    const throttle = ctx.sluice.throttle(`rc${run++}`, { ratePerSecond: 100, capacity: 10 });
    const lanes = throttle.gateLanes;
    expect((await lanes.admit('k', 'p1', 3, false, at(0))).kind).toBe('admitted');
    expect((await lanes.admit('k', 'p2', 1, false, at(0))).kind).toBe('admitted');
    const round = await lanes.dispatch(10, at(0));
    expect(round.jobs.map((j) => j.jobId)).toEqual(['p1', 'p2']);
    const [j1, j2] = round.jobs;
    expect(await lanes.start('k', 'p1', 3, { mode: 'start' }, String(j1!.startUs))).toMatchObject({ go: true });
    // p1 cost 1, but p2 is already out at its start: the meter stays one interval after p2.
    const after = await lanes.reconcile('k', -2, at(j1!.startUs - T0 + 2_000));
    expect(after.laneUs).toBe(j2!.startUs + spanOf(1, 10_000));
  });

  it('the global meter: charged, and refunded down to one interval past the horizon', async () => {
    const throttle = ctx.sluice.throttle(`rc${run++}`, { ratePerSecond: 100, capacity: 10, globalRatePerSecond: 100 });
    const lanes = throttle.gateLanes;
    const t = throttle.timing;
    expect((await lanes.admit('a', 'p1', 5, false, at(0))).kind).toBe('admitted');
    const [j1] = (await lanes.dispatch(10, at(0))).jobs;
    expect(await lanes.start('a', 'p1', 5, { mode: 'start' }, String(j1!.startUs))).toMatchObject({ go: true });
    const charged = await lanes.reconcile('a', 1, at(j1!.startUs - T0 + 1_000));
    expect(charged.globalUs).toBe(j1!.startUs + spanOf(5, 10_000) + spanOf(1, 10_000));
    const now = j1!.startUs - T0 + 2_000;
    const refunded = await lanes.reconcile('a', -6, at(now));
    expect(refunded.globalUs).toBe(T0 + now + t.leadUs + spanOf(1, 10_000));
  });
});
