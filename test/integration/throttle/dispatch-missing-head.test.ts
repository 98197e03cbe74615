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
