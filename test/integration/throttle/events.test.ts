// Job events, waitForResult and progress on a real Redis: the events a subscriber sees are those of
// other sluice instances (the submitter's and the worker's own connections), read from the throttle's
// stream in Redis; waitForResult answers a result, a failure, a timeout, a cancel and another tenant's job.
import { describe, expect, it } from 'vitest';
import { cancelJob } from '../../../src/admin/jobs.js';
import { ScriptRegistry } from '../../../src/redis/scripts.js';
import { isSluiceError, type Sluice, type ThrottledJob } from '../../../src/index.js';
import type { JobEvent } from '../../../src/throttle/events.js';
import { uniquePrefix, useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

const ctx = useBackend('single');

/** Three instances on one prefix: they share nothing but Redis. */
function trio(): { submitter: Sluice; worker: Sluice; watcher: Sluice } {
  const prefix = uniquePrefix();
  return { submitter: ctx.backend.sluice({ prefix }), worker: ctx.backend.sluice({ prefix }), watcher: ctx.backend.sluice({ prefix }) };
}

/** Events without their ids and times (those differ every run). */
const shape = (events: JobEvent[]) => events.map(({ id: _id, atMs: _at, ...rest }) => rest);

describe('events from Redis', () => {
  it('a subscriber in another instance sees admitted, started, progress and completed of a job, in order', async () => {
    const { submitter, worker, watcher } = trio();
    const config = { ratePerSecond: 20, capacity: 5 };
    const throttle = submitter.throttle('ev', config);
    const seen: JobEvent[] = [];
    const unsubscribe = await watcher.throttle('ev', config).events.subscribe((e) => seen.push(e));
    const w = worker.worker('ev', async (job: ThrottledJob) => {
      await job.progress(50);
      await job.progress({ step: 'done' });
      return { ok: job.data };
    }, { config });
    await w.waitUntilReady();
    const r = await throttle.submit('k', 'p1', { tenant: 'acme' });
    if (!r.admitted) throw new Error('not admitted');
    expect(await throttle.waitForResult(r.jobId, { timeoutMs: 10_000 })).toEqual({ ok: 'p1' });
    await until(() => seen.some((e) => e.type === 'completed'), 5_000, 'the completed event');
    expect(shape(seen)).toEqual([
      { type: 'admitted', jobId: r.jobId, lane: 'k', tenant: 'acme', startsAtMs: r.startsAtMs, position: 0 },
      { type: 'started', jobId: r.jobId, lane: 'k', tenant: 'acme', attemptsMade: 1 },
      { type: 'progress', jobId: r.jobId, lane: 'k', tenant: 'acme', progress: 50 },
      { type: 'progress', jobId: r.jobId, lane: 'k', tenant: 'acme', progress: { step: 'done' } },
      { type: 'completed', jobId: r.jobId, lane: 'k', tenant: 'acme', attemptsMade: 1 },
    ]);
    // Entry ids are Redis stream ids, increasing; atMs is their time part.
    const streamOrder = (a: string, b: string) => {
      const [am, as] = a.split('-').map(BigInt) as [bigint, bigint];
      const [bm, bs] = b.split('-').map(BigInt) as [bigint, bigint];
      return am === bm ? Number(as - bs) : Number(am - bm);
    };
    expect(seen.map((e) => e.id)).toEqual(seen.map((e) => e.id).sort(streamOrder));
    expect(new Set(seen.map((e) => e.id)).size).toBe(5);
    expect(seen.every((e) => e.atMs === Number(e.id.split('-')[0]))).toBe(true);
    // The job's status shows the last progress.
    const status = await throttle.job(r.jobId);
    expect(status?.progress).toEqual({ step: 'done' });
    expect(status?.state).toBe('completed');
    // The stream is one key in the throttle's hash tag (one cluster slot with the rest of the throttle).
    expect(throttle.keys.events).toBe(`${throttle.keys.tag}:ev`);
    expect(await submitter.redis.xlen(throttle.keys.events)).toBe(5);
    unsubscribe();
    await w.close();
  });

  it('a subscription to one job gets only that job\'s events', async () => {
    const { submitter, watcher } = trio();
    const config = { ratePerSecond: 0.01, capacity: 5 };
    const throttle = submitter.throttle('ev-one', config);
    const a = await throttle.submit('k', 'a');
    const seen: JobEvent[] = [];
    if (!a.admitted) throw new Error('not admitted');
    const unsubscribe = await watcher.throttle('ev-one', config).events.subscribe((e) => seen.push(e), { jobId: a.jobId });
    const b = await throttle.submit('k', 'b');
    if (!b.admitted) throw new Error('not admitted');
    const scripts = new ScriptRegistry(submitter.redis);
    expect(await cancelJob(scripts, submitter.redis, throttle, b.jobId)).toMatchObject({ cancelled: true });
    expect(await cancelJob(scripts, submitter.redis, throttle, a.jobId)).toMatchObject({ cancelled: true });
    await until(() => seen.length > 0, 5_000, 'the cancelled event');
    expect(shape(seen)).toEqual([{ type: 'cancelled', jobId: a.jobId, lane: 'k' }]);
    unsubscribe();
  });
});

describe('waitForResult and waitForJob', () => {
  it('a job that fails for good: failed events (retrying, then not) and SLUICE_ERR_JOB_FAILED with its reason', async () => {
    const { submitter, worker, watcher } = trio();
    const config = { ratePerSecond: 20, capacity: 5, attempts: 2 };
    const throttle = submitter.throttle('ev-fail', config);
    const seen: JobEvent[] = [];
    await watcher.throttle('ev-fail', config).events.subscribe((e) => seen.push(e));
    const w = worker.worker('ev-fail', async (job: ThrottledJob) => {
      throw new Error(`boom ${job.attemptsMade}`);
    }, { config });
    await w.waitUntilReady();
    const r = await throttle.submit('k', 1);
    if (!r.admitted) throw new Error('not admitted');
    const error = await throttle.waitForResult(r.jobId, { timeoutMs: 15_000 }).catch((e: unknown) => e);
    expect(isSluiceError(error, 'SLUICE_ERR_JOB_FAILED')).toBe(true);
    expect((error as { details: unknown }).details).toEqual({ failedReason: 'boom 1', attemptsMade: 2 });
    await until(() => seen.filter((e) => e.type === 'failed').length === 2, 5_000, 'both failed events');
    // A retry reaches the worker without a start: the gate sends it back to its lane (deferred, rate) first.
    expect(shape(seen.filter((e) => e.type !== 'deferred'))).toEqual([
      { type: 'admitted', jobId: r.jobId, lane: 'k', startsAtMs: r.startsAtMs, position: 0 },
      { type: 'started', jobId: r.jobId, lane: 'k', attemptsMade: 1 },
      { type: 'failed', jobId: r.jobId, lane: 'k', attemptsMade: 1, failedReason: 'boom 0', retrying: true },
      { type: 'started', jobId: r.jobId, lane: 'k', attemptsMade: 2 },
      { type: 'failed', jobId: r.jobId, lane: 'k', attemptsMade: 2, failedReason: 'boom 1', retrying: false },
    ]);
    expect(shape(seen.filter((e) => e.type === 'deferred'))).toEqual(seen.filter((e) => e.type === 'deferred').map(() => ({ type: 'deferred', jobId: r.jobId, lane: 'k', reason: 'rate' })));
    await w.close();
  });

  it('a job still queued: waitForJob answers its status at the timeout, waitForResult rejects SLUICE_ERR_WAIT_TIMEOUT', async () => {
    const throttle = ctx.sluice.throttle('ev-slow', { ratePerSecond: 0.01, capacity: 5 });
    const r = await throttle.submit('k', 1, { tenant: 'acme' });
    if (!r.admitted) throw new Error('not admitted');
    const status = await throttle.waitForJob(r.jobId, { timeoutMs: 300 });
    expect(status).toMatchObject({ id: r.jobId, state: 'queued', startsAtMs: r.startsAtMs });
    const error = await throttle.waitForResult(r.jobId, { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(isSluiceError(error, 'SLUICE_ERR_WAIT_TIMEOUT')).toBe(true);
    expect((error as { details: unknown }).details).toEqual({ state: 'queued' });
    // Another tenant's job is unknown to it, at once.
    expect(await throttle.waitForJob(r.jobId, { timeoutMs: 10_000, tenant: 'globex' })).toBeNull();
    const other = await throttle.waitForResult(r.jobId, { timeoutMs: 10_000, tenant: 'globex' }).catch((e: unknown) => e);
    expect(isSluiceError(other, 'SLUICE_ERR_NOT_FOUND')).toBe(true);
    // Its own tenant waits; a cancel during the wait ends it with null (the job is gone).
    const waiting = throttle.waitForJob(r.jobId, { timeoutMs: 20_000, tenant: 'acme' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await cancelJob(new ScriptRegistry(ctx.sluice.redis), ctx.sluice.redis, throttle, r.jobId, 'acme')).toMatchObject({ cancelled: true });
    expect(await waiting).toBeNull();
    // No subscriber left behind.
    expect(throttle.events.listeners).toBe(0);
  });
});
