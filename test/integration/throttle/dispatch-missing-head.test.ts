// A lane whose head job is admitted but not yet added to BullMQ (its submitter's add is a moment behind
// the admission, which already woke the dispatchers). The lane waits for it (FIFO), is not looked at
// twice in one call, and is looked at again 3 ms later — not a whole horizon later, which was what a
// burst of new lanes paid for their first start. Under a cap, the slot it could not use goes to another
// lane in the same call. Injected times on a real Redis.
import { describe, expect, it } from 'vitest';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

let run = 0;
const T0 = 1_800_000_000_000_000;
const at = (us: number) => String(T0 + us);
const MISSING_RETRY_US = 3_000;

describe.each(TOPOLOGIES)('a head job not added yet, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  it('is looked at again 3 ms later, and dispatched once its job exists', async () => {
    const throttle = ctx.sluice.throttle(`missing${run++}`, { ratePerSecond: 10, capacity: 5 });
    const lanes = throttle.gateLanes;
    const t = throttle.timing;
    expect((await lanes.admit('k', 'j1', 1, false, at(0))).kind).toBe('admitted');

    const first = await lanes.dispatch(10, at(0));
    expect(first.jobs).toEqual([]);
    // Called again at next - horizon: 3 ms from now.
    expect(first.nextUs - t.leadUs - T0).toBe(MISSING_RETRY_US);
    expect((await lanes.dispatch(10, at(MISSING_RETRY_US))).jobs).toEqual([]);

    await ctx.backend.raw.hset(throttle.keys.job('j1'), 'name', 'j');
    const round = await lanes.dispatch(10, at(2 * MISSING_RETRY_US));
    expect(round.jobs).toEqual([{ jobId: 'j1', laneId: 'k', startUs: T0 + 2 * MISSING_RETRY_US + t.deliveryUs }]);
  });

  it('a fast lane handed out as a run stops at a job not added yet, with its fields written as after its last hand-out', async () => {
    // 10,000/s: 100 µs apart, many due within the horizon, the lane alone: handed out as a run
    // (lua/throttle-dispatch.lua) until the head job that does not exist yet.
    const throttle = ctx.sluice.throttle(`missing${run++}`, { ratePerSecond: 10_000, capacity: 50 });
    const lanes = throttle.gateLanes;
    const t = throttle.timing;
    for (const id of ['j1', 'j2', 'j3', 'j4']) expect((await lanes.admit('k', id, 1, false, at(0))).kind).toBe('admitted');
    for (const id of ['j1', 'j2', 'j4']) await ctx.backend.raw.hset(throttle.keys.job(id), 'name', 'j');

    const round = await lanes.dispatch(10, at(0));
    const step = Math.floor(100 * (1 + t.marginPpm / 1e6));
    expect(round.jobs).toEqual([
      { jobId: 'j1', laneId: 'k', startUs: T0 + t.deliveryUs },
      { jobId: 'j2', laneId: 'k', startUs: T0 + t.deliveryUs + step },
    ]);
    expect(round.nextUs - t.leadUs - T0).toBe(MISSING_RETRY_US);
    const raw = ctx.backend.raw;
    // What the lane's last hand-out wrote: its depth, meter and outgoing units; its queue from j3 on;
    // busy with 2 units; waiting again (at the instant it was ready by, for the retry).
    expect(await raw.hmget(throttle.keys.lane('k'), 'd', 'c', 'od')).toEqual(['2', String(T0 + t.deliveryUs + 2 * step), '2']);
    expect(await raw.zrange(throttle.keys.laneQueue('k'), '0', '-1')).toEqual(['j3|1', 'j4|1']);
    expect(await raw.zscore(throttle.keys.busy, 'k')).toBe('2');
    expect(await raw.zscore(throttle.keys.waiting, 'k')).toBe(String(T0 + t.deliveryUs));
    expect(await raw.zcard(throttle.keys.ready)).toBe(0);
    expect(await raw.pttl(throttle.keys.laneOutgoing('k'))).toBeGreaterThan(0);

    await raw.hset(throttle.keys.job('j3'), 'name', 'j');
    const next = await lanes.dispatch(10, at(MISSING_RETRY_US));
    // (No start sooner than the delivery time after this call: past the lane's meter.)
    expect(next.jobs.map((j) => [j.jobId, j.startUs - T0])).toEqual([
      ['j3', MISSING_RETRY_US + t.deliveryUs],
      ['j4', MISSING_RETRY_US + t.deliveryUs + step],
    ]);
    expect(await raw.hmget(throttle.keys.lane('k'), 'd', 'od')).toEqual(['0', '4']);
    expect(await raw.zscore(throttle.keys.busy, 'k')).toBeNull();
    expect(await raw.pttl(throttle.keys.lane('k'))).toBeGreaterThan(0);
  });

  it('under a cap, the slot goes to a lane whose job exists, in the same call', async () => {
    const throttle = ctx.sluice.throttle(`missing${run++}`, { ratePerSecond: 10, capacity: 5, globalRatePerSecond: 100 });
    const lanes = throttle.gateLanes;
    const t = throttle.timing;
    expect((await lanes.admit('a', 'ja', 1, false, at(0))).kind).toBe('admitted');
    expect((await lanes.admit('b', 'pb', 1, false, at(0))).kind).toBe('admitted'); // 'p': in-process, no BullMQ job
    const round = await lanes.dispatch(10, at(0));
    expect(round.jobs).toEqual([{ jobId: 'pb', laneId: 'b', startUs: T0 + t.deliveryUs }]);
    // The next global slot (10 ms on) is beyond the 3 ms retry: the retry decides when to call again.
    expect(round.nextUs - t.leadUs - T0).toBe(MISSING_RETRY_US);

    await ctx.backend.raw.hset(throttle.keys.job('ja'), 'name', 'j');
    const next = await lanes.dispatch(10, at(MISSING_RETRY_US));
    expect(next.jobs).toEqual([{ jobId: 'ja', laneId: 'a', startUs: T0 + t.deliveryUs + Math.floor(10_000 * 1.01) }]);
  });
});
