// A queue refusal's retry time is exact (issue 8, defect 13): a lane's unit is its own until the job
// holding it starts — queued, or handed to a worker and not started yet (its worker says when it starts,
// lua/throttle-started.lua) — so a submit a microsecond before the retry time is refused, and one at it,
// the job's start said, is admitted: for a job already handed out (its start is known) and for a queued
// one (its predicted start is the one the dispatcher then gives it). Injected times on a real Redis, no
// clock involved.
import { describe, expect, it } from 'vitest';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

let run = 0;

describe.each(TOPOLOGIES)('exact queue retry times, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  it('frees a unit at its job start (said by its worker), exactly, whether handed out or still queued', async () => {
    const throttle = ctx.sluice.throttle(`retry${run++}`, { ratePerSecond: 10, capacity: 2 });
    const lanes = throttle.gateLanes;
    const t0 = 1_800_000_000_000_000;
    const at = (us: number) => String(t0 + us);
    expect((await lanes.admit('k', 'pA', 1, false, at(0))).kind).toBe('admitted');
    expect((await lanes.admit('k', 'pB', 1, false, at(0))).kind).toBe('admitted');

    // A is handed out (its start: 10 ms delivery after the round); B waits in the lane.
    const round = await lanes.dispatch(10, at(0));
    expect(round.jobs.map((j) => j.jobId)).toEqual(['pA']);
    const startA = round.jobs[0]!.startUs - t0;
    expect(startA).toBe(throttle.timing.deliveryUs);

    // Full until A starts: the refusal says exactly when.
    const refused = await lanes.admit('k', 'pC', 1, false, at(1_000));
    expect(refused).toMatchObject({ kind: 'queue_full', retryUs: startA - 1_000, depth: 2 });
    expect((await lanes.admit('k', 'pC', 1, false, at(startA - 1))).kind).toBe('queue_full');
    // At its start, A's worker starts it and says so.
    expect(await lanes.started('k', 'pA', 1, t0 + startA)).toBe(true);
    expect((await lanes.admit('k', 'pC', 1, false, at(startA))).kind).toBe('admitted');

    // Full again (B and C queued): room when B starts, at its predicted start; the dispatcher gives it that start.
    const full = await lanes.admit('k', 'pD', 1, false, at(startA + 1_000));
    expect(full.kind).toBe('queue_full');
    if (full.kind !== 'queue_full') return;
    const startB = startA + 1_000 + full.retryUs;
    expect(startB - startA).toBe(Math.floor(100_000 * 1.01)); // one lane interval, with the pacing margin
    const second = await lanes.dispatch(10, at(startB - throttle.timing.leadUs));
    expect(second.jobs).toEqual([{ jobId: 'pB', laneId: 'k', startUs: t0 + startB }]);
    expect((await lanes.admit('k', 'pD', 1, false, at(startB - 1))).kind).toBe('queue_full');
    expect(await lanes.started('k', 'pB', 1, t0 + startB)).toBe(true);
    expect((await lanes.admit('k', 'pD', 1, false, at(startB))).kind).toBe('admitted');
  });
});
