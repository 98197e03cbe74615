// An upstream's "later" covers the calls already handed out. The dispatcher hands a lane's next job to
// the workers up to `leadMs` before its instant, and a 429 often comes back after that: the pause must
// still hold it. The job handed out goes back to the head of its lane behind the deferred one, and
// nothing of the lane (or, for a throttle-wide pause, of any lane, capped or not) starts before the
// pause ends. Injected times on a real Redis.
import { describe, expect, it } from 'vitest';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

let run = 0;
const T0 = 1_800_000_000_000_000;
const at = (us: number) => String(T0 + us);

describe.each(TOPOLOGIES)('a pause after the hand-out, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  it('a lane pause sends its handed-out job back behind the deferred one; other lanes go on', async () => {
    // 100/s: interval 10 ms, so A and B are both handed out in one round (lead 50 ms).
    const throttle = ctx.sluice.throttle(`pause${run++}`, { ratePerSecond: 100, capacity: 5 });
    const lanes = throttle.gateLanes;
    for (const [lane, job] of [['k', 'pA'], ['k', 'pB'], ['other', 'pX']] as const) {
      expect((await lanes.admit(lane, job, 1, false, at(0))).kind).toBe('admitted');
    }
    const round = await lanes.dispatch(10, at(0));
    const slot = new Map(round.jobs.map((j) => [j.jobId, j.startUs - T0]));
    expect([...slot.keys()].sort()).toEqual(['pA', 'pB', 'pX']);
    expect(slot.get('pB')! - slot.get('pA')!).toBe(Math.floor(10_000 * 1.01));

    // A starts; its upstream answers 429, Retry-After 2 s, before B's instant.
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, at(slot.get('pA')!))).toMatchObject({ go: true });
    const pausedAt = slot.get('pA')! + 3_000;
    const resume = await lanes.pause('k', 2_000, 'lane', at(pausedAt));
    expect(resume - T0).toBe(pausedAt + 2_000_000);
    // The worker defers A: parked, back in its lane with the start it had.
    expect((await lanes.start('k', 'pA', 1, { mode: 'requeue', slotUs: T0 + slot.get('pA')! }, at(pausedAt + 1))).go).toBe(false);

    // B arrives at its slot: not started (the reply says which slot it had); parked and back in its
    // lane, behind A, which was handed out first.
    const bounced = await lanes.start('k', 'pB', 1, { mode: 'start' }, at(slot.get('pB')!));
    expect(bounced).toMatchObject({ go: false, slotUs: T0 + slot.get('pB')! });
    expect((await lanes.start('k', 'pB', 1, { mode: 'requeue', slotUs: T0 + slot.get('pB')! }, at(slot.get('pB')! + 1))).go).toBe(false);
    // Another lane's job is not held.
    expect(await lanes.start('other', 'pX', 1, { mode: 'start' }, at(slot.get('pX')!))).toMatchObject({ go: true, startUs: T0 + slot.get('pX')! });

    expect((await lanes.state('k', at(pausedAt + 20_000))).depth).toBe(2);
    expect((await lanes.dispatch(10, at(pausedAt + 20_000))).jobs).toEqual([]);
    expect((await lanes.dispatch(10, at(resume - T0 - throttle.timing.leadUs - 1))).jobs).toEqual([]);
    // A round 20 ms later sees both starts: A at the resume, B one interval after it.
    const after = await lanes.dispatch(10, at(resume - T0 - throttle.timing.leadUs + 20_000));
    expect(after.jobs.map((j) => j.jobId)).toEqual(['pA', 'pB']);
    expect(after.jobs[0]!.startUs).toBe(resume);
    expect(after.jobs[1]!.startUs - after.jobs[0]!.startUs).toBe(Math.floor(10_000 * 1.01));
  });

  it('a throttle-wide pause holds every lane, also without a global cap, and admission predicts it', async () => {
    const throttle = ctx.sluice.throttle(`pause${run++}`, { ratePerSecond: 100, capacity: 1 });
    const lanes = throttle.gateLanes;
    expect((await lanes.admit('a', 'pA', 1, false, at(0))).kind).toBe('admitted');
    expect((await lanes.admit('b', 'pB', 1, false, at(0))).kind).toBe('admitted');
    const round = await lanes.dispatch(10, at(0));
    expect(round.jobs.map((j) => j.jobId).sort()).toEqual(['pA', 'pB']);
    const slotB = round.jobs.find((j) => j.jobId === 'pB')!.startUs - T0;

    const resume = (await lanes.pause('a', 1_000, 'global', at(1_000))) - T0;
    expect(resume).toBe(1_001_000);
    expect((await lanes.start('b', 'pB', 1, { mode: 'start' }, at(slotB))).go).toBe(false);
    expect((await lanes.start('b', 'pB', 1, { mode: 'requeue', slotUs: T0 + slotB }, at(slotB + 1))).go).toBe(false);
    // Lane b is full (B is back in it): room when B starts, which is after the pause.
    const full = await lanes.admit('b', 'pC', 1, false, at(slotB + 2));
    expect(full).toMatchObject({ kind: 'queue_full', retryUs: resume - (slotB + 2) });
    // A late job gets no fresh start inside the pause either (it goes back).
    expect((await lanes.start('a', 'pA', 1, { mode: 'start' }, at(500_000))).go).toBe(false);

    expect((await lanes.dispatch(10, at(resume - throttle.timing.leadUs - 1))).jobs).toEqual([]);
    const after = await lanes.dispatch(10, at(resume - throttle.timing.leadUs));
    expect(after.jobs.map((j) => [j.jobId, j.startUs - T0]).sort()).toEqual([['pB', resume]]);
  });
});
