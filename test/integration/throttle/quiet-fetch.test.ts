// A throttle worker's fetch that follows its blocking wait on BullMQ's marker runs BullMQ's moveToActive
// and lua/throttle-unmark.lua in one MULTI (src/throttle/quiet-fetch.ts): when it takes the last job
// waiting, the base marker BullMQ's fetch adds is out before Redis serves the workers blocked on it, so
// another worker process is not woken for a fetch that finds nothing, and the fetching worker is drained
// (its next fetch blocks on the marker instead of asking again). Held here with a real blocked client
// behind the worker (BZPOPMIN on the marker, as BullMQ's workers wait) against BullMQ's own worker in the
// same setting, which wakes it.
import { Worker } from 'bullmq';
import { Cluster, type Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { Throttle } from '../../../src/index.js';
import { EarlyStartWorker } from '../../../src/throttle/early-start-worker.js';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

let run = 0;

describe.each(TOPOLOGIES)("a throttle worker's fetch wakes no blocked worker for nothing, %s Redis", (topology) => {
  const ctx = useBackend(topology);
  const closers: (() => Promise<unknown> | void)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  const drainedOf = (worker: Worker) => (worker as unknown as { drained: boolean }).drained;

  /** `n` jobs submitted to one lane of `throttle` (parked: none on the wait list yet). */
  async function submit(throttle: Throttle, n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await throttle.submit('k', { i });
      if (!r.admitted) throw new Error('not admitted');
      ids.push(r.jobId);
    }
    return ids;
  }

  /** A worker of the throttle's queue that fetches only when asked, drained (its first fetch found nothing). */
  async function fetcher(throttle: Throttle, kind: 'throttle' | 'bullmq'): Promise<Worker> {
    const queue = await throttle.bullQueue();
    const opts = { connection: queue.opts.connection, prefix: throttle.keys.bullPrefix, autorun: false };
    const worker = kind === 'throttle' ? new EarlyStartWorker(throttle.name, async () => undefined, opts) : new Worker(throttle.name, null, opts);
    closers.push(() => worker.close(true));
    await worker.waitUntilReady();
    expect(await worker.getNextJob('t0', { block: false })).toBeUndefined();
    expect(drainedOf(worker)).toBe(true);
    return worker;
  }

  /** Clients blocked on any master. */
  async function blockedClients(): Promise<number> {
    const raw = ctx.backend.raw;
    const nodes: Redis[] = raw instanceof Cluster ? raw.nodes('master') : [raw];
    const infos = await Promise.all(nodes.map((node) => node.info('clients')));
    return infos.reduce((a, info) => a + Number(/blocked_clients:(\d+)/.exec(info)?.[1] ?? 0), 0);
  }

  /** Runs `block` and waits until one more client is blocked in Redis; its outcome in an object (an async function would await it). */
  async function blocking<T>(block: () => Promise<T>): Promise<{ outcome: Promise<T> }> {
    const before = await blockedClients();
    const outcome = block();
    await until(async () => (await blockedClients()) > before, 5_000, 'one more client blocked');
    return { outcome };
  }

  /** The worker's fetch blocked on the marker, and another worker process blocked behind it (served after it). */
  async function bothBlocked(worker: Worker, marker: string, token: string) {
    const fetched = await blocking(() => worker.getNextJob(token, { block: true }));
    const raw = ctx.backend.raw;
    const blocker: Redis | Cluster = raw instanceof Cluster ? raw.duplicate() : raw.duplicate();
    closers.push(() => blocker.disconnect());
    const other = await blocking(() => blocker.bzpopmin(marker, 1));
    return { fetched: fetched.outcome, other: other.outcome };
  }

  const markerOf = (throttle: Throttle) => `${throttle.keys.jobPrefix}marker`;

  it('takes the last job waiting: the other blocked worker is not woken, and the fetching worker is drained', async () => {
    for (const kind of ['throttle', 'bullmq'] as const) {
      const throttle = ctx.sluice.throttle(`quiet${run++}`, { ratePerSecond: 1000, capacity: 10 });
      const ids = await submit(throttle, 1);
      const worker = await fetcher(throttle, kind);
      const drained: string[] = [];
      worker.on('drained', () => void drained.push('drained'));
      const { fetched, other } = await bothBlocked(worker, markerOf(throttle), 't1');
      // The round puts the job on the wait list with its marker: the first blocked, the worker, takes it.
      expect((await throttle.gateLanes.dispatch(10)).jobs.map((j) => j.jobId)).toEqual(ids);
      expect((await fetched)?.id).toBe(ids[0]);
      if (kind === 'throttle') {
        // Nothing waits and nothing woke: the other times out; no marker is left behind.
        expect(await other).toBeNull();
        expect(await ctx.backend.raw.zrange(markerOf(throttle), '0', '-1')).toEqual([]);
        expect(drainedOf(worker)).toBe(true);
        expect(drained).toEqual(['drained']);
      } else {
        // The control: BullMQ's own fetch marks a next job that is not there and wakes the other.
        expect(await other).toEqual([markerOf(throttle), '0', '0']);
        expect(drainedOf(worker)).toBe(false);
      }
    }
  });

  it('leaves the marker while a job still waits: the other blocked worker comes for it', async () => {
    const throttle = ctx.sluice.throttle(`quiet${run++}`, { ratePerSecond: 1000, capacity: 10 });
    const ids = await submit(throttle, 2);
    const worker = await fetcher(throttle, 'throttle');
    const { fetched, other } = await bothBlocked(worker, markerOf(throttle), 't1');
    expect((await throttle.gateLanes.dispatch(10)).jobs.map((j) => j.jobId)).toEqual(ids);
    expect((await fetched)?.id).toBe(ids[0]);
    expect(await other).toEqual([markerOf(throttle), '0', '0']);
    expect(drainedOf(worker)).toBe(false);
    // The worker's next fetch, at once and beside no wait, is BullMQ's as it is (its marker the start
    // gate's call takes out, lua/throttle-start.lua).
    expect((await worker.getNextJob('t2', { block: false }))?.id).toBe(ids[1]);
    expect(await ctx.backend.raw.zrange(markerOf(throttle), '0', '-1')).toEqual(['0']);
  });

  it('a transaction Redis refuses whole (EXECABORT, at its memory ceiling) is sent again as BullMQ sends a fetch, and fails as that does', async () => {
    const throttle = ctx.sluice.throttle(`quiet${run++}`, { ratePerSecond: 1000, capacity: 10 });
    const ids = await submit(throttle, 1);
    const worker = await fetcher(throttle, 'throttle');
    expect((await throttle.gateLanes.dispatch(10)).jobs.map((j) => j.jobId)).toEqual(ids);
    const raw = ctx.backend.raw;
    const nodes: Redis[] = raw instanceof Cluster ? raw.nodes('master') : [raw];
    await Promise.all(nodes.map((node) => node.config('SET', 'maxmemory', '1')));
    try {
      // The blocking wait takes the round's marker (a pop is not refused at the ceiling); the fetch is refused.
      await expect(worker.getNextJob('t1', { block: true })).rejects.toThrow(/^OOM /);
    } finally {
      await Promise.all(nodes.map((node) => node.config('SET', 'maxmemory', '0')));
    }
    // The job is still there for the next fetch.
    expect(await raw.llen(`${throttle.keys.jobPrefix}wait`)).toBe(1);
  });

  it('after Redis forgot the scripts (SCRIPT FLUSH), the fetch and the unmark go again by their text, as quiet', async () => {
    const throttle = ctx.sluice.throttle(`quiet${run++}`, { ratePerSecond: 1000, capacity: 10 });
    const worker = await fetcher(throttle, 'throttle');
    const marker = markerOf(throttle);
    for (const round of [1, 2]) {
      const ids = await submit(throttle, 1);
      if (round === 2) {
        // Both scripts were known to Redis and to the worker (round 1's fetch): now Redis has neither.
        const raw = ctx.backend.raw;
        const nodes: Redis[] = raw instanceof Cluster ? raw.nodes('master') : [raw];
        await Promise.all(nodes.map((node) => node.script('FLUSH')));
      }
      const { fetched, other } = await bothBlocked(worker, marker, `t${round}`);
      expect((await throttle.gateLanes.dispatch(10)).jobs.map((j) => j.jobId)).toEqual(ids);
      expect((await fetched)?.id).toBe(ids[0]);
      expect(await other).toBeNull();
      expect(await ctx.backend.raw.zrange(marker, '0', '-1')).toEqual([]);
    }
  });
});
