// A job that reaches the gate after its start (its worker fell behind) when later jobs of its lane were
// handed out already. Without a global cap or quotas the lane's starts matter only among themselves: the
// late job and its lane's later hand-outs move together (FIFO and spacing kept) instead of the late one
// going back to its lane, as long as none of the later ones reached the gate. And the lane's count of
// units handed out (od) does not outlive the outgoing set that says when each starts. Injected times on a
// real Redis, except where the set's real expiry is the point.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { laneMember } from '../../../src/throttle/keys.js';
import { DispatchModel } from '../../../src/throttle/dispatch.model.js';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';
import { arrive, gateCall, reachStart, sayStarted, startedCall, type Holding } from '../../helpers/gate-driver.js';

let run = 0;
const T0 = 1_800_000_000_000_000;
const at = (us: number) => String(T0 + us);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(TOPOLOGIES)('late starts, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  /** A throttle at 100/s (interval 10 ms: three jobs of one lane in one round, lead 50 ms) and its jobs handed out (under a cap, those of its shorter horizon). */
  async function threeHandedOut(config: { globalRatePerSecond?: number } = {}) {
    const throttle = ctx.sluice.throttle(`late${run++}`, { ratePerSecond: 100, capacity: 5, ...config });
    const lanes = throttle.gateLanes;
    for (const job of ['pA', 'pB', 'pC']) expect((await lanes.admit('k', job, 1, false, at(0))).kind).toBe('admitted');
    const round = await lanes.dispatch(10, at(0));
    expect(round.jobs.map((j) => j.jobId)).toEqual(config.globalRatePerSecond ? ['pA', 'pB'] : ['pA', 'pB', 'pC']);
    const slot = new Map(round.jobs.map((j) => [j.jobId, j.startUs]));
    const spacing = Math.floor(10_000 * 1.01);
    expect(slot.get('pB')! - slot.get('pA')!).toBe(spacing);
    return { throttle, lanes, slot, spacing };
  }

  it('no cap: the late job and the later hand-outs of its lane move together; none goes back', async () => {
    const { throttle, lanes, slot, spacing } = await threeHandedOut();
    const late = slot.get('pA')! - T0 + 40_000;
    const a = await lanes.start('k', 'pA', 1, { mode: 'start' }, at(late));
    // A fresh start the late lead from now (A is at its worker: no delivery), and B and C exactly as far behind it as before.
    expect(a).toMatchObject({ go: true, startUs: T0 + late + throttle.timing.lateLeadUs });
    const shift = (a as { startUs: number }).startUs - slot.get('pA')!;
    const b = await lanes.start('k', 'pB', 1, { mode: 'start' }, String(slot.get('pB')! + shift));
    expect(b).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pB')! + shift }));
    const c = await lanes.start('k', 'pC', 1, { mode: 'start' }, String(slot.get('pC')! + shift - 3_000));
    expect(c).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pC')! + shift }));
    expect((c as { startUs: number }).startUs - (b as { startUs: number }).startUs).toBe(spacing);
    // The lane's next job comes one interval after C's new start, not before.
    expect((await lanes.admit('k', 'pD', 1, false, String(slot.get('pC')! + shift))).kind).toBe('admitted');
    const next = await lanes.dispatch(10, String(slot.get('pC')! + shift));
    expect(next.jobs.map((j) => j.jobId)).toEqual(['pD']);
    expect(next.jobs[0]!.startUs).toBeGreaterThanOrEqual(slot.get('pC')! + shift + spacing);
  });

  it('no cap: a late job whose earlier hand-outs no worker has taken yet moves them too, ahead of it (two processes took them in order, their calls came in the other)', async () => {
    const { throttle, lanes, slot, spacing } = await threeHandedOut();
    // B's call reaches Redis first, late; A (taken first, by another process) is still on its way.
    const late = slot.get('pB')! - T0 + 40_000;
    const b = await lanes.start('k', 'pB', 1, { mode: 'start' }, at(late));
    // A moves with it: A takes the fresh start the late lead from now, and B comes one spacing after it.
    const fresh = T0 + late + throttle.timing.lateLeadUs;
    expect(b).toEqual(expect.objectContaining({ go: true, startUs: fresh + spacing }));
    // A's call then finds its start moved, still ahead of B's; C stays one spacing after B.
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, at(late + 500))).toEqual(expect.objectContaining({ go: true, startUs: fresh }));
    expect(await lanes.start('k', 'pC', 1, { mode: 'start' }, at(late + 600))).toEqual(expect.objectContaining({ go: true, startUs: fresh + 2 * spacing }));
    // Before, B took the fresh start and A, late at its own call behind a job a worker has, went behind C.
  });

  it("no cap: a later job of the lane that has its answer keeps its start; the late one takes the slot of the next that no worker has yet, which takes the lane's next instant", async () => {
    const { lanes, slot, spacing } = await threeHandedOut();
    // B's worker was on time; A's comes after B's start.
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(slot.get('pB')! - 1_000))).toMatchObject({ go: true, startUs: slot.get('pB')! });
    // A comes late to its first call, behind a job a worker has: it is told its own start, to find itself
    // late there and ask again naming the jobs its process holds (B's worker may be its own).
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(slot.get('pB')! + 5_000))).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pA')! }));
    // B is another process's: A passes its slot on along the hand-outs after B that no worker has (C): it
    // takes C's start, behind B only (before, it took the lane's next instant, after C).
    const retake = await lanes.start('k', 'pA', 1, { mode: 'late', heldUs: slot.get('pA')!, held: [] }, String(slot.get('pB')! + 6_000));
    expect(retake).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pC')! }));
    expect(retake).not.toHaveProperty('shiftUs');
    // C takes the lane's next instant, and the lane's next job comes one interval after it.
    expect(await lanes.start('k', 'pC', 1, { mode: 'start' }, String(slot.get('pC')!))).toMatchObject({ go: true, startUs: slot.get('pC')! + spacing });
    expect((await lanes.admit('k', 'pD', 1, false, String(slot.get('pC')!))).kind).toBe('admitted');
    const next = await lanes.dispatch(10, String(slot.get('pC')!));
    expect(next.jobs.map((j) => [j.jobId, j.startUs])).toEqual([['pD', slot.get('pC')! + 2 * spacing]]);
  });

  it("no cap: a late job passes its slot on only along hand-outs after the lane's latest start (one before it keeps its slot)", async () => {
    const { lanes, slot, spacing } = await threeHandedOut();
    // C's worker took C early and C started (its member left the outgoing set); B is at no worker yet.
    expect(await lanes.start('k', 'pC', 1, { mode: 'start' }, String(slot.get('pA')!))).toMatchObject({ go: true, startUs: slot.get('pC')! });
    expect(await lanes.started('k', 'pC', 1, slot.get('pC')!)).toBe(true);
    // A comes 6 ms late: B's slot is not its to take (B would then start after C), so it starts behind C.
    const a = await lanes.start('k', 'pA', 1, { mode: 'start' }, String(slot.get('pA')! + 6_000));
    expect(a.go && a.startUs).toBeGreaterThanOrEqual(slot.get('pC')! + spacing);
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(slot.get('pA')! + 7_000))).toMatchObject({ go: true, startUs: slot.get('pB')! });
  });

  it('no cap: the later jobs its own process holds move with the late job, named in its late call: the lane keeps its order', async () => {
    const { throttle, lanes, slot, spacing } = await threeHandedOut();
    // B has its answer, at A's process (held there, not started); C is not taken yet.
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(slot.get('pB')! - 1_000))).toMatchObject({ go: true, startUs: slot.get('pB')! });
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(slot.get('pB')! + 5_000))).toMatchObject({ go: true, startUs: slot.get('pA')! });
    // A's late call names B (and a member of its process from before A's start, which is not its to move).
    const now = slot.get('pB')! + 6_000;
    const retake = await lanes.start('k', 'pA', 1, { mode: 'late', heldUs: slot.get('pA')!, held: ['pB|1', 'p0|1'] }, String(now));
    expect(retake).toMatchObject({ go: true });
    const shift = (retake as { startUs: number; shiftUs: number }).shiftUs;
    expect((retake as { startUs: number }).startUs - slot.get('pA')!).toBe(shift);
    expect(shift).toBeGreaterThan(0);
    // B (told by its process) and C (told by the gate) keep their places behind A, spaced as before.
    expect(Number(await ctx.backend.raw.zscore(throttle.keys.laneOutgoing('k'), 'pB|1'))).toBe(slot.get('pB')! + shift);
    const c = await lanes.start('k', 'pC', 1, { mode: 'start' }, String(slot.get('pC')! + shift - 3_000));
    expect(c).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pC')! + shift }));
    expect(slot.get('pC')! + shift - (slot.get('pB')! + shift)).toBe(spacing);
  });

  it("no cap: once an admission has taken the late job for started (a second past its start), it starts behind the lane's hand-outs", async () => {
    const { throttle, lanes, slot, spacing } = await threeHandedOut();
    // A's worker takes A in time and has its answer, then goes silent. An admission more than a second
    // after A's start takes A for started (its worker is taken for dead): A's member leaves the outgoing
    // set, so B and C cannot be known to follow it there: they keep their starts.
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(slot.get('pA')! - 5_000))).toMatchObject({ go: true, startUs: slot.get('pA')! });
    expect((await lanes.admit('k', 'pD', 1, false, String(slot.get('pA')! + 1_006_000))).kind).toBe('admitted');
    const late = slot.get('pA')! + 1_007_000;
    expect(await lanes.start('k', 'pA', 1, { mode: 'late', heldUs: slot.get('pA')! }, String(late))).toEqual(
      expect.objectContaining({ go: true, startUs: Math.max(late + throttle.timing.lateLeadUs, slot.get('pC')! + spacing) }),
    );
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(slot.get('pB')!))).toMatchObject({ go: true, startUs: slot.get('pB')! });
  });

  it('a later hand-out moved more than a horizon ahead is not told its start until a horizon before it: a pause set meanwhile holds it', async () => {
    // 50/s, one job a round: A handed out and answered, B handed out 0.9 s later; A's worker comes 0.9 s
    // late and moves B with it, 0.9 s ahead of now (more than the 50 ms horizon).
    const throttle = ctx.sluice.throttle(`late${run++}`, { ratePerSecond: 50, capacity: 3 });
    const lanes = throttle.gateLanes;
    const horizon = throttle.timing.leadUs;
    expect((await lanes.admit('k', 'pA', 1, false, at(0))).kind).toBe('admitted');
    const [a] = (await lanes.dispatch(1, at(900_000))).jobs;
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, at(900_000))).toMatchObject({ go: true, startUs: a!.startUs });
    expect((await lanes.admit('k', 'pB', 1, false, at(900_000))).kind).toBe('admitted');
    const [b] = (await lanes.dispatch(1, at(1_800_000))).jobs;
    const late = await lanes.start('k', 'pA', 1, { mode: 'late', heldUs: a!.startUs }, at(1_800_000));
    const shift = (late as { startUs: number }).startUs - a!.startUs;
    // B's worker asks now: no answer yet, ask again a horizon before its (moved) start.
    const moved = b!.startUs + shift;
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, at(1_800_000))).toMatchObject({ go: false, askAtUs: moved });
    // The upstream says "later" for 2 s meanwhile: asked again, B goes back (its worker parks it).
    await lanes.pause('k', 2_000, 'lane', at(1_900_000));
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(moved - horizon))).toEqual(expect.objectContaining({ go: false, slotUs: moved }));
  });

  it('a late job moves at most 64 later hand-outs of its lane; with more it starts behind them (one call stays short)', async () => {
    for (const [jobs, moves] of [[65, true], [66, false]] as const) {
      // 100,000/s: every job of the lane in one round.
      const throttle = ctx.sluice.throttle(`late${run++}`, { ratePerSecond: 100_000, capacity: 100 });
      const lanes = throttle.gateLanes;
      for (let i = 0; i < jobs; i++) expect((await lanes.admit('k', `p${i}`, 1, false, at(0))).kind).toBe('admitted');
      const round = await lanes.dispatch(100, at(0));
      expect(round.jobs.length).toBe(jobs);
      const first = round.jobs[0]!;
      const answer = await lanes.start('k', first.jobId, 1, { mode: 'start' }, String(first.startUs + 40_000));
      expect(answer.go).toBe(true);
      const last = round.jobs.at(-1)!;
      // Moved: the second job's start is now one interval after the first's; behind: the first after the last.
      const second = await lanes.start('k', round.jobs[1]!.jobId, 1, { mode: 'start' }, String(first.startUs + 40_001));
      const startOf = (a: typeof answer) => (a as { startUs: number }).startUs;
      if (moves) expect(startOf(second) - startOf(answer)).toBe(Math.floor(10 * 1.01));
      else expect(startOf(answer)).toBeGreaterThan(last.startUs);
    }
  });

  it("under a global cap a late job whose lane's next hand-out is past too takes the fresh start, and that one the cap's next: the lane keeps its order and nothing goes back", async () => {
    const { throttle, lanes, slot, spacing } = await threeHandedOut({ globalRatePerSecond: 100 });
    const now = slot.get('pA')! + 40_000;
    // A: the fresh start the late lead from now (the cap's next slot, pB's, is past too).
    const fresh = now + throttle.timing.lateLeadUs;
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(now))).toEqual(expect.objectContaining({ go: true, startUs: fresh }));
    // B, when it comes, starts a lane's (and the cap's) span after A's fresh start; before, it went back.
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(now + 500))).toEqual(expect.objectContaining({ go: true, startUs: fresh + spacing }));
    // C, handed out next, comes after B.
    const next = await lanes.dispatch(10, String(now + spacing));
    expect(next.jobs.map((j) => j.jobId)).toEqual(['pC']);
    expect(next.jobs[0]!.startUs).toBe(fresh + 2 * spacing);
  });

  it('under a global cap a late job takes a later hand-out\'s slot past by less than the lateness tolerance (as a job that late at its own slot would start)', async () => {
    const { throttle, lanes, slot, spacing } = await threeHandedOut({ globalRatePerSecond: 100 });
    const { lateLeadUs, lateToleranceUs } = throttle.timing;
    // B's slot is 1 ms past the soonest A can start (the late lead from now) less the tolerance.
    const now = slot.get('pB')! + lateToleranceUs - lateLeadUs - 1_000;
    expect(now - slot.get('pA')!).toBeGreaterThan(lateToleranceUs);
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(now))).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pB')! }));
    // B takes the cap's next slot after its old one.
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(now + 500))).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pB')! + spacing }));
  });

  it("under a global cap the late job's later hand-outs whose slots are past take fresh ones in order; one past the horizon is told it a horizon before", async () => {
    const throttle = ctx.sluice.throttle(`late${run++}`, { ratePerSecond: 100, capacity: 10, globalRatePerSecond: 100 });
    const lanes = throttle.gateLanes;
    const jobs = ['pA', 'pB', 'pC', 'pD', 'pE', 'pF'];
    for (const job of jobs) expect((await lanes.admit('k', job, 1, false, at(0))).kind).toBe('admitted');
    const slot = new Map<string, number>();
    for (let t = 0; slot.size < jobs.length; t += 20_000) for (const j of (await lanes.dispatch(10, at(t))).jobs) slot.set(j.jobId, j.startUs);
    expect([...slot.keys()]).toEqual(jobs);
    const spacing = Math.floor(10_000 * 1.01);
    const now = slot.get('pF')! + 100_000;
    const fresh = now + throttle.timing.lateLeadUs;
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(now))).toEqual(expect.objectContaining({ go: true, startUs: fresh }));
    const horizon = throttle.timing.leadUs;
    for (const [i, job] of jobs.slice(1).entries()) {
      const at = fresh + (i + 1) * spacing;
      const answer = await lanes.start('k', job, 1, { mode: 'start' }, String(now + 500));
      expect(answer).toEqual(expect.objectContaining(at - (now + 500) > horizon ? { go: false, askAtUs: at } : { go: true, startUs: at }));
    }
    // F, asked again a horizon before its start, has it.
    const f = fresh + 5 * spacing;
    expect(await lanes.start('k', 'pF', 1, { mode: 'start' }, String(f - horizon))).toEqual(expect.objectContaining({ go: true, startUs: f }));
  });

  it("under a global cap a late job takes the next hand-out's slot while no worker has it, and that one a fresh start: the lane keeps its order and the cap its slots", async () => {
    const { lanes, slot, spacing } = await threeHandedOut({ globalRatePerSecond: 100 });
    const now = slot.get('pA')! + 6_000;
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(now))).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pB')! }));
    // B, still on its way, finds the next start: the cap's next slot after its old one.
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(now + 500))).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pB')! + spacing }));
    // Before, A went back to its lane and started after B.
  });

  it("under a global cap a late job behind a later hand-out a worker has goes back to its lane (its handler free for the next job), not along their tail", async () => {
    const throttle = ctx.sluice.throttle(`late${run++}`, { ratePerSecond: 100, capacity: 10, globalRatePerSecond: 100 });
    const lanes = throttle.gateLanes;
    const jobs = ['pA', 'pB', 'pC'];
    for (const job of jobs) expect((await lanes.admit('k', job, 1, false, at(0))).kind).toBe('admitted');
    const slot = new Map<string, number>();
    for (let t = 0; slot.size < jobs.length; t += 10_000) for (const j of (await lanes.dispatch(10, at(t))).jobs) slot.set(j.jobId, j.startUs);
    // B's worker has B (on time); A's comes 6 ms after B's start: C is at no worker yet.
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, String(slot.get('pB')! - 1_000))).toMatchObject({ go: true, startUs: slot.get('pB')! });
    const now = slot.get('pB')! + 6_000;
    // Waiting for C's slot kept A's handler from the next job: under a cap with handlers slower than the
    // lane that cost 3 of 55 starts a second (docs/algorithms.md, "Under a global cap: passed on").
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(now))).toEqual(expect.objectContaining({ go: false, slotUs: slot.get('pA')! }));
    // C keeps its slot.
    expect(await lanes.start('k', 'pC', 1, { mode: 'start' }, String(now + 500))).toEqual(expect.objectContaining({ go: true, startUs: slot.get('pC')! }));
  });

  it('a busy slow lane keeps its capacity once the outgoing set has expired (Redis time, real expiry)', async () => {
    // 0.5/s: one start every 2 s; capacity 3. Three queued, the first handed out now: od = 1.
    const throttle = ctx.sluice.throttle(`late${run++}`, { ratePerSecond: 0.5, capacity: 3 });
    const lanes = throttle.gateLanes;
    for (const job of ['pA', 'pB', 'pC']) expect((await lanes.admit('k', job, 1, false, '')).kind).toBe('admitted');
    const round = await lanes.dispatch(10);
    expect(round.jobs.map((j) => j.jobId)).toEqual(['pA']);
    expect(await lanes.start('k', 'pA', 1, { mode: 'start' }, String(round.jobs[0]!.startUs))).toMatchObject({ go: true });
    // The outgoing set expires a second after A's start, before any admission settled A's unit.
    await sleep(round.jobs[0]!.startUs / 1000 - Date.now() + 1_300);
    expect(await ctx.backend.raw.exists(throttle.keys.laneOutgoing('k'))).toBe(0);
    // Two queued, none handed out and not started: room for one more, exactly.
    expect((await lanes.admit('k', 'pD', 1, false, '')).kind).toBe('admitted');
    expect((await lanes.admit('k', 'pE', 1, false, '')).kind).toBe('queue_full');
    expect((await lanes.state('k')).depth).toBe(3);
  });

  /**
   * A throttle at 10/s (one job per round) and capacity `capacity`, driven through its scripts and the
   * model side by side (each answer the same): `pA` and `pB` admitted, `pA` handed out and told to go at `s`.
   */
  async function oneHandedOut(capacity: number, fetched = true, pacingMargin?: number) {
    const throttle = ctx.sluice.throttle(`late${run++}`, { ratePerSecond: 10, capacity, ...(pacingMargin === undefined ? {} : { pacingMargin }) });
    const lanes = throttle.gateLanes;
    const t = throttle.timing;
    const model = new DispatchModel({ globalIntervalUs: 0, marginPpm: t.marginPpm });
    const admit = async (jobId: string, now: number) => {
      const { nowUs: _now, ...got } = await lanes.admit('k', jobId, 1, false, String(now));
      expect(got).toEqual(model.admit(now, 'k', jobId, 1, capacity, t.laneIntervalUs, 0));
      return got;
    };
    const start = async (jobId: string, how: { mode: 'start' } | { mode: 'late'; heldUs: number }, now: number) => {
      const got = await lanes.start('k', jobId, 1, how, String(now));
      const want = model.start(now, 'k', laneMember(jobId, 1), how, t.laneIntervalUs, 0, t.leadUs, t.lateLeadUs, t.lateToleranceUs);
      expect(got.go ? { go: true, startUs: got.startUs } : { go: false, ...(got.slotUs ? { slotUs: got.slotUs } : {}) }).toEqual(want);
      return want;
    };
    /** The job's worker says it started at `startUs` (lua/throttle-started.lua): true when its unit was still held. */
    const say = async (jobId: string, startUs: number) => {
      const got = await lanes.started('k', jobId, 1, startUs);
      expect(got).toBe(model.started('k', laneMember(jobId, 1), startUs));
      return got;
    };
    for (const job of ['pA', 'pB']) expect((await admit(job, T0)).kind).toBe('admitted');
    const round = await lanes.dispatch(10, at(0));
    expect({ nextUs: round.nextUs, jobs: round.jobs }).toEqual(model.dispatch(T0, t.leadUs, t.deliveryUs, 10));
    expect(round.jobs.map((j) => j.jobId)).toEqual(['pA']);
    const s = round.jobs[0]!.startUs;
    if (fetched) expect(await start('pA', { mode: 'start' }, s - 8_000)).toEqual({ go: true, startUs: s });
    /** A dispatch round at `now` on both; its jobs. */
    const dispatch = async (now: number) => {
      const got = await lanes.dispatch(10, String(now));
      expect({ nextUs: got.nextUs, jobs: got.jobs }).toEqual(model.dispatch(now, t.leadUs, t.deliveryUs, 10));
      return got.jobs;
    };
    return { throttle, admit, start, say, dispatch, s };
  }

  // A wider margin leaves the tolerance at its 5 ms (src/throttle/config.ts): the refusal names that, not half the margin.
  it.each([{ pacingMargin: undefined }, { pacingMargin: 0.03 }])('a handed-out job holds its unit until its worker says it started, late or not (the lane never holds more than its capacity; pacing margin $pacingMargin)', async ({ pacingMargin }) => {
    const { throttle, admit, start, say, s } = await oneHandedOut(3, true, pacingMargin);
    expect(throttle.timing.lateToleranceUs).toBe(5_000);
    // A's worker misses A's instant. An admission after that instant counts A as not started: A, B and C fill the lane.
    expect((await admit('pC', s + 6_000)).kind).toBe('admitted');
    expect(await admit('pD', s + 6_500)).toMatchObject({ kind: 'queue_full', depth: 3 });
    const late = await start('pA', { mode: 'late', heldUs: s }, s + 7_000);
    expect(late).toEqual({ go: true, startUs: s + 7_000 + throttle.timing.lateLeadUs });
    const fresh = (late as { startUs: number }).startUs;
    // Before its fresh start the refusal names that start; past it, A's word not in yet, the lateness tolerance.
    expect(await admit('pD', s + 9_000)).toEqual({ kind: 'queue_full', depth: 3, retryUs: fresh - (s + 9_000) });
    expect(await admit('pD', fresh + 1)).toEqual({ kind: 'queue_full', depth: 3, retryUs: throttle.timing.lateToleranceUs });
    // A's worker says A started: its unit is free, exactly one.
    expect(await say('pA', fresh)).toBe(true);
    expect((await admit('pD', fresh + 2)).kind).toBe('admitted');
    expect(await admit('pE', fresh + 3)).toMatchObject({ kind: 'queue_full', depth: 3 });
  });

  it('on time: the unit is free when the worker says the job started, not at its instant', async () => {
    const { admit, say, s } = await oneHandedOut(2);
    // A (handed out) and B fill the lane; A's instant passes with no word from its worker.
    expect(await admit('pC', s + 1_000)).toMatchObject({ kind: 'queue_full', depth: 2 });
    expect(await say('pA', s)).toBe(true);
    expect((await admit('pC', s + 1_500)).kind).toBe('admitted');
    // Said twice (a repeated message): nothing more is freed.
    expect(await say('pA', s)).toBe(false);
    expect(await admit('pD', s + 2_000)).toMatchObject({ kind: 'queue_full', depth: 2 });
  });

  it('a job no worker has taken yet holds its unit however late (a slow fetch) while its lane hands out', async () => {
    const { throttle, admit, start, say, dispatch, s } = await oneHandedOut(3, false);
    // BullMQ's fetch falls behind: A is still in the dispatched set 1.5 s past its start, not started.
    // B is handed out 0.9 s in (the lane's outgoing set lives a second past that).
    expect((await dispatch(s + 890_000)).map((j) => j.jobId)).toEqual(['pB']);
    expect((await admit('pC', s + 1_500_000)).kind).toBe('admitted');
    expect(await admit('pD', s + 1_500_001)).toMatchObject({ kind: 'queue_full', depth: 3 });
    expect(await ctx.backend.raw.hget(throttle.keys.global, 'sl')).toBeNull();
    // Kept on, past B's set life too (stretched a second from the admission that kept it).
    expect(await admit('pD', s + 2_450_000)).toMatchObject({ kind: 'queue_full', depth: 3 });
    const fresh = await start('pA', { mode: 'start' }, s + 2_460_000);
    expect(fresh).toMatchObject({ go: true });
    expect(await say('pA', (fresh as { startUs: number }).startUs)).toBe(true);
    expect((await admit('pD', s + 2_480_000)).kind).toBe('admitted');
  });

  it('a worker that never says its job started (it died) holds the unit a second past the start, then the lane takes it for started, counted', async () => {
    const { throttle, admit, s } = await oneHandedOut(2);
    expect(await admit('pC', s + 999_999)).toMatchObject({ kind: 'queue_full', depth: 2 });
    expect(await ctx.backend.raw.hget(throttle.keys.global, 'sl')).toBeNull();
    expect((await admit('pC', s + 1_000_000)).kind).toBe('admitted');
    // The throttle counts the units its silent workers held (the admin overview's silentUnits, the
    // metric sluice_throttle_silent_units).
    expect(await ctx.backend.raw.hget(throttle.keys.global, 'sl')).toBe('1');
    expect(await throttle.silentUnits()).toBe(1);
  });

  it('a late job never starts within its interval of a later job of its lane that started already', async () => {
    // A at 10 ms, B at 30.2, C at 50.4 (50/s); B's worker is on time and B starts; A's worker comes at 30.2.
    const throttle = ctx.sluice.throttle(`late${run++}`, { ratePerSecond: 50, capacity: 3 });
    const lanes = throttle.gateLanes;
    for (const job of ['pA', 'pB', 'pC']) expect((await lanes.admit('k', job, 1, false, at(0))).kind).toBe('admitted');
    const slots = [];
    for (const now of [0, 0, 400]) slots.push(...(await lanes.dispatch(1, at(now))).jobs.map((j) => j.startUs));
    expect(await lanes.start('k', 'pB', 1, { mode: 'start' }, at(400))).toMatchObject({ go: true, startUs: slots[1] });
    // B starts and says so: its member leaves the outgoing set, A's and C's stay. A must not move with C
    // to a start 10 ms after B's (stop 25 briefly let it, by keeping A's unused start in the outgoing set
    // past B's: reverted; the lane's latest said start, ls, now tells): it starts behind C.
    expect(await lanes.started('k', 'pB', 1, slots[1]!)).toBe(true);
    expect((await lanes.admit('k', 'pD', 1, false, String(slots[1]!))).kind).toBe('admitted');
    const a = await lanes.start('k', 'pA', 1, { mode: 'start' }, String(slots[1]!));
    expect(a.go && a.startUs - slots[1]!).toBeGreaterThanOrEqual(Math.floor(20_000 * 1.01));
  });

  it("a job late past its outgoing set's life holds its unit again, in a set of its own", async () => {
    const { admit, start, s } = await oneHandedOut(2);
    // A's worker asks 1.2 s after A's instant: the outgoing set has outlived A's start (od would count nothing).
    const now = s + 1_200_000;
    expect(await start('pA', { mode: 'late', heldUs: s }, now)).toMatchObject({ go: true });
    // A (not started) and B: full. Before the fix the admission found the set expired and admitted.
    expect(await admit('pC', now + 1_000)).toMatchObject({ kind: 'queue_full', depth: 2 });
  });

  it('workers taking jobs on time or late, at the gate or at their instant: the scripts answer as the model, and each lane starts in FIFO order (but for the jobs sent behind), spaced', async () => {
    const LANES = ['a', 'b', 'c'];
    const step = fc.record({
      // Now and then a second or more: a worker silent past its start (dead, stalled) and the outgoing set's life.
      dtUs: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 4, arbitrary: fc.integer({ min: 0, max: 8_000 }) }, { weight: 4, arbitrary: fc.integer({ min: 0, max: 60_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 900_000, max: 1_600_000 }) }),
      op: fc.oneof(
        // One or several submits into one lane, most into one busy lane (lanes meet their capacity).
        {
          weight: 3,
          arbitrary: fc.record({
            kind: fc.constant('admit' as const),
            lane: fc.oneof({ weight: 4, arbitrary: fc.constant(LANES[0]!) }, fc.constantFrom(...LANES)),
            n: fc.integer({ min: 1, max: 3 }),
          }),
        },
        { weight: 2, arbitrary: fc.record({ kind: fc.constant('dispatch' as const), maxJobs: fc.integer({ min: 1, max: 8 }) }) },
        // A worker takes the first job handed out (or, now and then, any): its gate call.
        { weight: 4, arbitrary: fc.record({ kind: fc.constant('arrive' as const), any: fc.oneof({ weight: 4, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat() }) }) },
        // A job that has its start reaches it: on time it starts; later than the tolerance it asks again.
        { weight: 3, arbitrary: fc.record({ kind: fc.constant('run' as const), any: fc.oneof({ weight: 3, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat() }) }) },
        // A started job's word that it started reaches Redis (its unit is free from then on).
        { weight: 3, arbitrary: fc.record({ kind: fc.constant('say' as const), any: fc.oneof({ weight: 4, arbitrary: fc.constant(-1) }, { weight: 1, arbitrary: fc.nat() }) }) },
      ),
    });
    await fc.assert(
      // A small capacity too: a lane full of jobs handed out and late is where the count of units matters.
      fc.asyncProperty(fc.constantFrom(50, 100, 333), fc.constantFrom(3, 12), fc.array(step, { minLength: 20, maxLength: 80 }), async (ratePerSecond, capacity, steps) => {
        const throttle = ctx.sluice.throttle(`lateprop${run++}`, { ratePerSecond, capacity });
        const lanes = throttle.gateLanes;
        const t = throttle.timing;
        const model = new DispatchModel({ globalIntervalUs: 0, marginPpm: t.marginPpm });
        let now = T0;
        let job = 0;
        // Handed out and not arrived yet, in hand-out order; given a start and waiting for it; each lane's
        // admission order; its starts.
        const out: { lane: string; jobId: string }[] = [];
        const holding: Holding[] = [];
        // Started, their word on its way.
        const starting: Holding[] = [];
        const admitted = new Map<string, string[]>(LANES.map((l) => [l, []]));
        const started = new Map<string, { jobId: string; startUs: number }[]>(LANES.map((l) => [l, []]));
        const both = gateCall(lanes, model, t, () => now, () => 1, 0);
        const say = startedCall(lanes, model, () => 1);
        for (const { dtUs, op } of steps) {
          now += dtUs;
          if (op.kind === 'admit') {
            for (let i = 0; i < op.n; i++) {
              const jobId = `p${job++}`;
              const { nowUs: _now, ...got } = await lanes.admit(op.lane, jobId, 1, false, String(now));
              const want = model.admit(now, op.lane, jobId, 1, capacity, t.laneIntervalUs, 0);
              expect(got).toEqual(want);
              if (want.kind === 'admitted') admitted.get(op.lane)!.push(jobId);
            }
          } else if (op.kind === 'dispatch') {
            const got = await lanes.dispatch(op.maxJobs, String(now));
            const want = model.dispatch(now, t.leadUs, t.deliveryUs, op.maxJobs);
            expect({ nextUs: got.nextUs, jobs: got.jobs }).toEqual(want);
            out.push(...want.jobs.map((j) => ({ lane: j.laneId, jobId: j.jobId })));
          } else if (op.kind === 'say') {
            await sayStarted(say, starting, op.any);
          } else if (op.kind === 'arrive' && out.length > 0) {
            await arrive(both, out.splice(op.any < 0 ? 0 : op.any % out.length, 1)[0]!, holding, out);
          } else if (op.kind === 'run' && holding.length > 0) {
            await reachStart(both, holding, starting, now, t.lateToleranceUs, (j) => void started.get(j.lane)!.push({ jobId: j.jobId, startUs: j.startUs }), op.any);
          }
        }
        // The jobs still holding a start take it on time.
        for (const j of holding) started.get(j.lane)!.push({ jobId: j.jobId, startUs: j.startUs });
        const spacing = Math.floor(t.laneIntervalUs * (1 + t.marginPpm / 1e6));
        for (const lane of LANES) {
          const starts = [...started.get(lane)!].sort((x, y) => x.startUs - y.startUs);
          // In admission order, but for the jobs that went behind later hand-outs of their lane (where
          // going back to it would have put them too), and never closer than the lane's interval.
          const order = admitted.get(lane)!;
          const inOrder = starts.filter((s) => !model.sentBehind.has(laneMember(s.jobId, 1))).map((s) => order.indexOf(s.jobId));
          expect(inOrder).toEqual([...inOrder].sort((x, y) => x - y));
          for (let i = 1; i < starts.length; i++) expect(starts[i]!.startUs - starts[i - 1]!.startUs).toBeGreaterThanOrEqual(spacing);
        }
      }),
      { numRuns: Number(process.env.PROP_RUNS ?? 200), ...(process.env.PROP_SEED ? { seed: Number(process.env.PROP_SEED), path: process.env.PROP_PATH, endOnFailure: true } : {}) },
    );
  });
});
