// The dispatchers' back-pressure, counted inside the dispatch round (lua/throttle-dispatch.lua): with a
// bound, a round hands out at most the bound less the jobs handed out and not taken by a worker yet
// (entries in the dispatched set younger than `forgottenUs`), and none when that many are out — then it
// says to look again 2 ms later. Without one, the round is whole. Injected times on a real Redis;
// 'p'-prefixed ids are in-process jobs (no BullMQ job needed).
import { describe, expect, it } from 'vitest';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

let run = 0;
const T0 = 1_800_000_000_000_000;
const at = (us: number) => String(T0 + us);
const FORGOTTEN_US = 1_000_000;

describe.each(TOPOLOGIES)('dispatch with a bound on jobs not taken yet, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  async function tenLanes() {
    const throttle = ctx.sluice.throttle(`bound${run++}`, { ratePerSecond: 1000, capacity: 5 });
    const lanes = throttle.gateLanes;
    for (let i = 0; i < 10; i++) expect((await lanes.admit(`k${i}`, `p${i}`, 1, false, at(0))).kind).toBe('admitted');
    return { throttle, lanes };
  }

  it('hands out the bound less what is out, none when that many are out, and again as workers take them', async () => {
    const { throttle, lanes } = await tenLanes();
    const bound = { maxOutstanding: 4, forgottenUs: FORGOTTEN_US };
    const first = await lanes.dispatch(256, at(0), bound);
    expect(first.jobs).toHaveLength(4);

    const full = await lanes.dispatch(256, at(1_000), bound);
    expect(full.jobs).toEqual([]);
    // Look again 2 ms later: next - horizon is 1 ms from now, and the loop adds its 1 ms.
    expect(full.nextUs - throttle.timing.leadUs - full.nowUs).toBe(1_000);

    // A worker takes one (its start call): one more may go out.
    const taken = first.jobs[0]!;
    expect((await lanes.start(taken.laneId, taken.jobId, 1, { mode: 'start' }, at(2_000))).go).toBe(true);
    const next = await lanes.dispatch(256, at(2_000), bound);
    expect(next.jobs).toHaveLength(1);
    expect(new Set([...first.jobs, ...next.jobs].map((j) => j.jobId)).size).toBe(5);
  });

  it('does not count entries older than forgottenUs (lost: lane repair brings them back)', async () => {
    const { lanes } = await tenLanes();
    const bound = { maxOutstanding: 4, forgottenUs: FORGOTTEN_US };
    expect((await lanes.dispatch(256, at(0), bound)).jobs).toHaveLength(4);
    // The four are still out, but their starts are more than forgottenUs ago.
    const later = await lanes.dispatch(256, at(FORGOTTEN_US + 20_000), bound);
    expect(later.jobs).toHaveLength(4);
  });

  it('without a bound hands out every due job', async () => {
    const { lanes } = await tenLanes();
    expect((await lanes.dispatch(256, at(0))).jobs).toHaveLength(10);
  });
});
