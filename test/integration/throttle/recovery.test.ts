// Property 6: nothing admitted is lost. A worker killed with SIGKILL mid-job: the job runs again
// (at-least-once) and completes, and the lane's count stays right. A handler that throws is retried
// with backoff up to `attempts`, then fails with its reason. Deferrals by the rate gate, and by an
// upstream's "later" (DeferJob), use no attempt. On a single node and on a 3-master cluster.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sluice } from '../../../src/index.js';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { ThrottleProc, until } from '../../helpers/throttle-procs.js';

const fastRecovery = { lockDurationMs: 1_500, stalledIntervalMs: 500 };

describe.each(TOPOLOGIES)('recovery (%s)', (topology) => {
  let backend: Backend;
  const procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend(topology);
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.close()));
    await backend?.dispose();
  });

  async function setup(config: object) {
    const prefix = uniquePrefix();
    const sluice: Sluice = backend.sluice({ prefix });
    const throttle = sluice.throttle('jobs', config as never);
    const spawn = async (behaviour: object = {}) => {
      const p = await ThrottleProc.start(backend, prefix, 'jobs', config as never, fastRecovery);
      procs.push(p);
      await p.worker(5, behaviour);
      return p;
    };
    return { throttle, spawn };
  }

  it('a worker killed with SIGKILL mid-job: the job runs again elsewhere and completes; the lane count stays right', async () => {
    const { throttle, spawn } = await setup({ ratePerSecond: 50, capacity: 10 });
    const doomed = await spawn({ hang: true });
    const r = await throttle.submit('tenant', { tag: 'crash-me', hang: true });
    expect(r.admitted).toBe(true);
    if (!r.admitted) return;
    await until(() => doomed.starts.length === 1, 10_000, 'the first run');
    expect((await throttle.job(r.jobId))?.state).toBe('active');
    await doomed.kill();

    const survivor = await spawn();
    await until(async () => (await throttle.job(r.jobId))?.state === 'completed', 20_000, 'the re-run to complete');
    const status = await throttle.job(r.jobId);
    expect(status?.result).toMatchObject({ done: 'crash-me', pid: survivor.handle.child.pid });
    expect(survivor.starts.map((s) => s.id)).toEqual([r.jobId]);
    expect(await throttle.lane('tenant')).toMatchObject({ depth: 0, jobs: 0 });
    // The lane still admits up to its full capacity.
    const more = await Promise.all(Array.from({ length: 10 }, (_, i) => throttle.submit('tenant', { i }, { nowMs: 1e15 })));
    expect(more.filter((m) => m.admitted).length).toBe(10);
  });

  it('a throwing handler is retried with backoff up to attempts, then fails with its reason', async () => {
    const { throttle, spawn } = await setup({ ratePerSecond: 50, capacity: 10, attempts: 3, backoff: { type: 'fixed', delayMs: 200 } });
    const worker = await spawn();
    const ok = await throttle.submit('k', { tag: 'twice', failTimes: 2 });
    const bad = await throttle.submit('k', { tag: 'always', failTimes: 99 });
    if (!ok.admitted || !bad.admitted) throw new Error('not admitted');
    await until(async () => (await throttle.job(ok.jobId))?.state === 'completed' && (await throttle.job(bad.jobId))?.state === 'failed', 15_000, 'both to finish');
    expect(await throttle.job(ok.jobId)).toMatchObject({ state: 'completed', attemptsMade: 3, result: { done: 'twice' } });
    expect(await throttle.job(bad.jobId)).toMatchObject({ state: 'failed', attemptsMade: 3, failedReason: 'planned failure 3' });
    const runs = worker.starts.filter((s) => s.tag === 'always').map((s) => s.t);
    expect(runs.length).toBe(3);
    for (let i = 1; i < runs.length; i++) expect(runs[i]! - runs[i - 1]!).toBeGreaterThanOrEqual(200 - 5); // the backoff
  });

  it('jobs sent back by the rate gate or by DeferJob use no attempt', async () => {
    const { throttle, spawn } = await setup({ ratePerSecond: 4, capacity: 20, attempts: 1 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await throttle.submit('slow', { tag: `n${i}`, ...(i === 0 ? { deferMs: 400 } : {}) });
      if (r.admitted) ids.push(r.jobId);
    }
    // A backlog: when the worker comes, every job is due; the dispatcher hands them out one lane
    // interval apart, each just before its start.
    await new Promise((r) => setTimeout(r, 1_500));
    const worker = await spawn();
    await until(async () => (await Promise.all(ids.map((id) => throttle.job(id)))).every((s) => s?.state === 'completed'), 15_000, 'all to complete');
    // Five jobs at 4/s on one lane: most waited for their slot; none failed for it.
    const states = await Promise.all(ids.map((id) => throttle.job(id)));
    expect(states.every((s) => s?.attemptsMade === 1)).toBe(true);
    // The deferred one ran twice (the upstream said "later" the first time) and still completed.
    expect(worker.starts.filter((s) => s.tag === 'n0').length).toBe(2);
    // Waiting for a start costs no trip through BullMQ: each job was taken once, at its turn; the
    // deferred one a second time, after it went back to its lane.
    const queue = await throttle.bullQueue();
    const started = await Promise.all(ids.map(async (id) => (await queue.getJob(id))!.attemptsStarted));
    expect(started).toEqual([2, 1, 1, 1, 1]);
  });
});
