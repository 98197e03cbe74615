// The global cap under multi-tenant load (issue 13), and a lane's FIFO order across worker processes
// (issue 8, defect 9). 10 heavy keys x 100 jobs and 190 light keys x 3 jobs, in random order, under a
// cap of 200/s with lanes of 50/s, two worker processes: the cap holds in every second, starts run near
// the cap while demand exceeds it (work-conserving), keys share it as the ideal schedule does (Jain vs
// the reference model's schedule of the same submits), light keys' first starts come within a second
// of the ideal's, and nothing trails behind. Then one lane's jobs start in submit order across two workers.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { capJobs, capReport, submitAll } from '../../helpers/global-cap.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { ThrottleProc, until } from '../../helpers/throttle-procs.js';

const config = { ratePerSecond: 50, capacity: 1000, globalRatePerSecond: 200 };

describe('global cap under load', () => {
  let backend: Backend;
  const procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend('single');
  });
  // Each test's worker processes are closed after it: left running, the earlier tests' took the CPU a
  // 30 ms handler's timing needs (the capped order case failed 3 of 6 after them, 0 of 4 alone).
  afterEach(async () => {
    await Promise.all(procs.splice(0).map((p) => p.close()));
  });
  afterAll(async () => {
    await backend?.dispose();
  });

  it('200 keys with uneven demand share a cap of 200/s: work-conserving, fair, never over', async () => {
    const prefix = uniquePrefix();
    const workers = await Promise.all([0, 1].map(() => ThrottleProc.start(backend, prefix, 'cap', config)));
    procs.push(...workers);
    await Promise.all(workers.map((w) => w.worker(10)));
    const throttle = backend.sluice({ prefix }).throttle('cap', config);
    const jobs = capJobs(10, 100, 190, 3);
    const byId = new Map<string, (typeof jobs)[number]>();
    await submitAll(jobs, async (j) => {
      const r = await throttle.submit(j.key, { k: j.key });
      expect(r.admitted).toBe(true);
      if (r.admitted) byId.set(r.jobId, j);
    });
    const count = () => workers.reduce((a, w) => a + w.starts.length, 0);
    await until(() => count() >= jobs.length, 40_000, 'every start');
    for (const w of workers) for (const s of w.starts) byId.get(s.id)!.start = s.t;
    const r = capReport(jobs, config);
    expect(r.started).toBe(jobs.length);
    expect(r.maxIn1s).toBeLessThanOrEqual(200);
    // 0.99 is the pacing margin's ceiling; the bench measures 0.97 on a quiet machine.
    expect(r.achievedOverCap).toBeGreaterThanOrEqual(0.9);
    expect(r.jainVsIdeal).toBeGreaterThanOrEqual(0.95);
    expect(r.lightFirstStartMs.p99!).toBeLessThanOrEqual(r.lightFirstStartIdealMs.p99! + 1_000);
    expect(r.makespanOverIdeal).toBeLessThanOrEqual(1.2);
  });

  it("keeps one lane's FIFO order across two worker processes", async () => {
    // 15/s: one start every 67 ms, longer than the 50 ms dispatch horizon, so a job that reaches its
    // worker late still finds its successor not handed out and takes a fresh start ahead of it (for
    // faster lanes a job later than delivery + tolerance can fall behind its successor: docs/algorithms.md).
    const prefix = uniquePrefix();
    const lane = { ratePerSecond: 15, capacity: 200 };
    const workers = await Promise.all([0, 1].map(() => ThrottleProc.start(backend, prefix, 'fifo', lane)));
    procs.push(...workers);
    const throttle = backend.sluice({ prefix }).throttle('fifo', lane);
    // Queued before the workers come: a backlog, the case where two workers raced for it before.
    for (let i = 0; i < 30; i++) expect((await throttle.submit('k', { tag: String(i) })).admitted).toBe(true);
    await Promise.all(workers.map((w) => w.worker(10)));
    await until(() => workers.reduce((a, w) => a + w.starts.length, 0) >= 30, 20_000, 'every start');
    const starts = workers.flatMap((w) => w.starts).sort((a, b) => a.t - b.t);
    expect(starts.map((s) => Number(s.tag))).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(new Set(starts.map((s) => s.pid)).size).toBe(2);
  });

  /**
   * 100/s against two processes of one 30 ms handler each (at most ~66 starts/s): the 60 jobs of one lane
   * start in their order, and both handlers are kept busy.
   */
  async function slowHandlersKeepOrder(lane: { ratePerSecond: number; capacity: number; globalRatePerSecond?: number }, busyShare: number) {
    const prefix = uniquePrefix();
    const workers = await Promise.all([0, 1].map(() => ThrottleProc.start(backend, prefix, 'slow', lane, { collectAtStart: true })));
    procs.push(...workers);
    const throttle = backend.sluice({ prefix }).throttle('slow', lane);
    await Promise.all(workers.map((w) => w.worker(1, { durationMs: 30 })));
    // Warm processes (a cold one's first start can come late, and a late start behind a job the other
    // process holds cannot keep its place: docs/algorithms.md), then the lane, faster than they can run it.
    for (let i = 0; i < 6; i++) expect((await throttle.submit(`warm${i}`, { tag: 'warm' })).admitted).toBe(true);
    await until(() => workers.reduce((a, w) => a + w.starts.length, 0) >= 6, 20_000, 'the warm-up starts');
    for (const w of workers) w.starts.length = 0;
    for (let i = 0; i < 60; i++) expect((await throttle.submit('k', { tag: String(i) })).admitted).toBe(true);
    await until(() => workers.reduce((a, w) => a + w.starts.length, 0) >= 60, 20_000, 'every start');
    const starts = workers.flatMap((w) => w.starts).sort((a, b) => a.t - b.t);
    expect(starts.map((s) => Number(s.tag))).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(new Set(starts.map((s) => s.pid)).size).toBe(2);
    // Both handlers kept busy: at least `busyShare` of what two 30 ms handlers can start.
    const spanS = (starts[59]!.t - starts[0]!.t) / 1000;
    expect(59 / spanS).toBeGreaterThanOrEqual(busyShare * (2 * 1000) / 30);
  }

  it("keeps one lane's order across two worker processes whose handlers are slower than the lane", async () => {
    // A process that held jobs for their instants met them with its handler busy, and its late jobs took
    // starts behind the jobs the other process held (test written against ~25 of 60 out of order). Each now
    // takes no more jobs than it has handlers while they are the bottleneck (src/throttle/hold-policy.ts).
    await slowHandlersKeepOrder({ ratePerSecond: 100, capacity: 200 }, 0.8);
  });

  it("keeps that order under a global cap too", async () => {
    // Under a cap a late job's later hand-outs whose slots were past went back to their lane and came back
    // through their workers in either order (the scripts before failed this 2 of 2). They now take
    // fresh slots in their order (lua/throttle-start.lua, "passed on").
    // (At least 75 %: a late job waits for the next cap slot it can reach, 5 ms on average here; 51-56
    // starts a second were seen on a quiet machine, against 66.7 the handlers could run.)
    await slowHandlersKeepOrder({ ratePerSecond: 100, capacity: 200, globalRatePerSecond: 100 }, 0.75);
  });
});
