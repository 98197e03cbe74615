// Cancel and retry on a real Redis with a real worker: a queued job's cancel removes it and frees its
// lane units in one step (another tenant's job reads as missing; a started, completed or failed job is
// refused with its state); a failed job's retry goes back through its lane, bound included.
import { describe, expect, it } from 'vitest';
import { cancelJob, failedJobs, jobDetail, retryJob } from '../../../src/admin/jobs.js';
import { ScriptRegistry } from '../../../src/redis/scripts.js';
import type { ThrottledJob } from '../../../src/index.js';
import { useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

const ctx = useBackend('single');

describe('cancel', () => {
  it('removes a queued job and frees its units atomically; refuses others with their state', async () => {
    const throttle = ctx.sluice.throttle('cancel', { ratePerSecond: 0.01, capacity: 5 });
    const scripts = new ScriptRegistry(ctx.sluice.redis);
    const a = await throttle.submit('acme', 'a', { tenant: 'acme', cost: 2 });
    const b = await throttle.submit('acme', 'b', { tenant: 'acme', cost: 3 });
    expect(a.admitted && b.admitted).toBe(true);
    if (!a.admitted || !b.admitted) return;
    // Full: a third unit is refused.
    expect((await throttle.submit('acme', 'c', { tenant: 'acme' })).admitted).toBe(false);
    expect(await cancelJob(scripts, ctx.sluice.redis, throttle, a.jobId, 'globex')).toEqual({ cancelled: false, state: 'missing' });
    expect(await cancelJob(scripts, ctx.sluice.redis, throttle, a.jobId, 'acme')).toEqual({ cancelled: true, freedUnits: 2, previousState: 'delayed' });
    expect(await throttle.job(a.jobId)).toBeNull();
    expect((await throttle.lane('acme')).depth).toBe(3);
    expect(await ctx.sluice.redis.zscore(throttle.keys.busy, 'acme')).toBe('3');
    // The freed units are usable at once.
    expect((await throttle.submit('acme', 'd', { tenant: 'acme', cost: 2 })).admitted).toBe(true);
    expect(await cancelJob(scripts, ctx.sluice.redis, throttle, a.jobId)).toEqual({ cancelled: false, state: 'missing' });
    expect(await cancelJob(scripts, ctx.sluice.redis, throttle, b.jobId)).toEqual({ cancelled: true, freedUnits: 3, previousState: 'delayed' });
  });

  it('refuses a started job (409 material) and a completed one', async () => {
    const sluice = ctx.backend.sluice();
    const throttle = sluice.throttle('cancel-run', { ratePerSecond: 50, capacity: 5 });
    const scripts = new ScriptRegistry(sluice.redis);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    const worker = sluice.worker('cancel-run', async (job: ThrottledJob) => {
      started.push(job.id);
      await gate;
      return 'ok';
    });
    await worker.waitUntilReady();
    const r = await throttle.submit('k', 1);
    if (!r.admitted) throw new Error('not admitted');
    await until(() => started.length === 1, 10_000, 'the start');
    expect(await cancelJob(scripts, sluice.redis, throttle, r.jobId)).toEqual({ cancelled: false, state: 'active' });
    release();
    await until(async () => (await throttle.job(r.jobId))?.state === 'completed', 10_000, 'completion');
    expect(await cancelJob(scripts, sluice.redis, throttle, r.jobId)).toEqual({ cancelled: false, state: 'completed' });
    await worker.close();
  });
});

describe('retry', () => {
  it('re-admits a failed job through its lane: refused while the lane is full, run once it has room', async () => {
    const sluice = ctx.backend.sluice();
    const throttle = sluice.throttle('retry', { ratePerSecond: 20, capacity: 1 });
    let fail = true;
    const runs: string[] = [];
    const worker = sluice.worker('retry', (job: ThrottledJob) => {
      runs.push(job.id);
      if (fail) throw new Error('upstream down');
      return 'done';
    });
    await worker.waitUntilReady();
    const r = await throttle.submit('k', { n: 1 }, { tenant: 'acme' });
    if (!r.admitted) throw new Error('not admitted');
    await until(async () => (await throttle.job(r.jobId))?.state === 'failed', 10_000, 'failure');
    const failed = await failedJobs(throttle, 10, 0);
    expect(failed.total).toBe(1);
    expect(failed.jobs[0]).toMatchObject({ id: r.jobId, state: 'failed', tenant: 'acme', failedReason: 'upstream down', payload: { n: 1 } });
    expect(await retryJob(throttle, 'nope')).toEqual({ retried: false, reason: 'missing' });

    // Fill the lane (capacity 1) with a job that waits behind a paused worker: the retry is refused.
    await worker.close();
    const blocker = await throttle.submit('k', 'blocker');
    expect(blocker.admitted).toBe(true);
    const refused = await retryJob(throttle, r.jobId);
    expect(refused).toMatchObject({ retried: false, reason: 'queue_full', capacity: 1, queued: 1 });
    expect((await jobDetail(throttle, r.jobId))!.state).toBe('failed');

    fail = false;
    const worker2 = sluice.worker('retry', (job: ThrottledJob) => {
      runs.push(job.id);
      return 'done';
    });
    await worker2.waitUntilReady();
    await until(async () => (await throttle.job(blocker.admitted ? blocker.jobId : ''))?.state === 'completed', 10_000, 'blocker');
    const ok = await retryJob(throttle, r.jobId);
    expect(ok).toMatchObject({ retried: true });
    await until(async () => (await throttle.job(r.jobId))?.state === 'completed', 10_000, 'retried run');
    expect((await jobDetail(throttle, r.jobId))!.result).toBe('done');
    expect((await throttle.lane('k')).depth).toBe(0);
    expect(await retryJob(throttle, r.jobId)).toEqual({ retried: false, reason: 'not_failed', state: 'completed' });
    await worker2.close();
  });
});

describe('a sharded throttle', () => {
  it('cancel, detail, retry and the failed list find the jobs of every shard', async () => {
    const sluice = ctx.backend.sluice();
    const throttle = sluice.throttle('sharded-jobs', { ratePerSecond: 50, capacity: 5, shards: 3 });
    const scripts = new ScriptRegistry(sluice.redis);
    // Lanes k0..k8 land in all three shards.
    const ids: string[] = [];
    for (let i = 0; i < 9; i++) {
      const r = await throttle.submit(`k${i}`, { i }, { tenant: 'acme' });
      if (!r.admitted) throw new Error('not admitted');
      ids.push(r.jobId);
    }
    expect(new Set(ids.map((id) => id.slice(-3))).size).toBe(3);
    for (const [i, id] of ids.entries()) expect(await jobDetail(throttle, id)).toMatchObject({ id, state: 'queued', lane: `k${i}` });
    expect(await jobDetail(throttle, ids[0]!.replace(/\.s\d$/, ''))).toBeNull();
    // Cancel one job of each shard: its unit is freed in its lane.
    for (const i of [0, 1, 2, 3, 4, 5, 6, 7, 8]) {
      expect(await cancelJob(scripts, sluice.redis, throttle, ids[i]!, 'acme')).toEqual({ cancelled: true, freedUnits: 1, previousState: 'delayed' });
      expect((await throttle.lane(`k${i}`)).depth).toBe(0);
    }
    // Failed jobs of every shard, merged most recent first.
    const worker = sluice.worker('sharded-jobs', () => {
      throw new Error('nope');
    });
    await worker.waitUntilReady();
    const failing: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await throttle.submit(`f${i}`, { i });
      if (!r.admitted) throw new Error('not admitted');
      failing.push(r.jobId);
    }
    await until(async () => (await failedJobs(throttle, 10, 0)).total === 6, 10_000, 'six failures');
    const all = await failedJobs(throttle, 10, 0);
    expect(new Set(all.jobs.map((j) => j.id))).toEqual(new Set(failing));
    for (let i = 1; i < all.jobs.length; i++) expect(all.jobs[i - 1]!.finishedAtMs!).toBeGreaterThanOrEqual(all.jobs[i]!.finishedAtMs!);
    const page2 = await failedJobs(throttle, 4, 4);
    expect(page2.jobs.map((j) => j.id)).toEqual(all.jobs.slice(4).map((j) => j.id));
    await worker.close();
    // A retry goes back through its lane in its shard.
    expect(await retryJob(throttle, failing[0]!)).toMatchObject({ retried: true });
    expect((await throttle.job(failing[0]!))?.state).toBe('queued');
  });
});
