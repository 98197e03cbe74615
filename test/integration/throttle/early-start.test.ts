// A throttle's BullMQ worker begins each job's processing as soon as it fetches the job, and fetches
// the starts of a round at once (src/throttle/early-start-worker.ts). BullMQ's own loop fetches while
// fetches return jobs, up to its concurrency (a throttle's: handlers + held jobs, 110), before it hands
// any to the processor: at a burst's first hand-out the first gate call came 120 fetches late and most
// starts were handed back (bench/global-cap.ts at 2,000/s; docs/benchmarks.md). Held here on real Redis,
// by the order of events, not by timings.
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThrottledJob } from '../../../src/index.js';
import { EarlyStartWorker } from '../../../src/throttle/early-start-worker.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

let backend: Backend;
let connection: Redis;
beforeAll(async () => {
  backend = await startBackend('single');
  connection = new Redis(backend.server!.port, '127.0.0.1', { maxRetriesPerRequest: null });
});
afterAll(async () => {
  connection?.disconnect();
  await backend?.dispose();
});

/** A plain BullMQ queue with `n` jobs waiting. */
async function queueWith(n: number): Promise<{ prefix: string; queue: Queue }> {
  const prefix = uniquePrefix();
  const queue = new Queue('q', { connection, prefix });
  await queue.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'j', data: { i } })));
  return { prefix, queue };
}

describe("a throttle's BullMQ worker", () => {
  it('begins processing each job before fetching the next (BullMQ alone fetches them all first)', async () => {
    const order = async (make: (handle: (job: Job) => Promise<unknown>, o: { connection: Redis; prefix: string; concurrency: number }) => Worker) => {
      const { prefix, queue } = await queueWith(30);
      const events: string[] = [];
      const worker = make(async (job) => void events.push(`run ${String(job.data.i)}`), { connection, prefix, concurrency: 50 });
      worker.on('active', (job) => void events.push(`fetched ${String(job.data.i)}`));
      await until(async () => (await queue.getCompletedCount()) === 30, 20_000, 'all 30 jobs completed');
      await worker.close();
      await queue.close();
      return events;
    };
    const early = await order((handle, o) => new EarlyStartWorker('q', handle, o));
    const bull = await order((handle, o) => new Worker('q', handle, o));
    // Each job runs before the next one is fetched.
    for (let i = 0; i < 30; i++) {
      const runAt = early.indexOf(`run ${i}`);
      expect(runAt).toBeGreaterThan(early.indexOf(`fetched ${i}`));
      if (i < 29) expect(runAt).toBeLessThan(early.indexOf(`fetched ${i + 1}`));
    }
    // The control: BullMQ's own loop fetched (nearly) all of them before the first ran.
    expect(bull.indexOf('run 0')).toBeGreaterThan(bull.indexOf('fetched 20'));
  });

  it('fetches more at once when asked, within its concurrency, and processes what they got as BullMQ does', async () => {
    const { prefix, queue } = await queueWith(20);
    const ran: number[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    // Not running its own loop: only the extra fetches take jobs.
    const worker = new EarlyStartWorker<{ i: number }>(
      'q',
      async (job) => {
        ran.push(job.data.i);
        await gate;
        return job.data.i;
      },
      { connection, prefix, concurrency: 5, autorun: false },
    );
    await worker.waitUntilReady();
    worker.fetchMore(20);
    await until(() => ran.length === 5, 10_000, 'five jobs running');
    worker.fetchMore(20);
    expect(ran).toHaveLength(5);
    expect(await queue.getActiveCount()).toBe(5);
    release();
    await until(async () => (await queue.getCompletedCount()) === 5, 10_000, 'the five completed');
    expect(await queue.getWaitingCount()).toBe(15);
    // Completed through BullMQ's processJob: its return value is the job's result.
    const done = await queue.getCompleted();
    expect(done.map((j) => j.returnvalue).sort((a, b) => a - b)).toEqual([...ran].sort((a, b) => a - b));
    // A fetch that finds nothing: nothing runs, nothing fails, and the loop's own state is left alone.
    // BullMQ's Worker.moveToActive would set its block deadline to the next delayed job's instant (a
    // parked job's, an hour on: the loop then stopped fetching until one of its jobs finished).
    await queue.drain();
    await queue.add('parked', { i: -1 }, { delay: 3_600_000 });
    const loopState = () => {
      const w = worker as unknown as { blockUntil: number; limitUntil: number };
      return { blockUntil: w.blockUntil, limitUntil: w.limitUntil };
    };
    const before = loopState();
    worker.fetchMore(3);
    await worker.close();
    expect(loopState()).toEqual(before);
    expect(ran).toHaveLength(5);
    expect(await queue.getFailedCount()).toBe(0);
    await queue.close();
  });

  it("takes a round's starts with fetches beside BullMQ's loop, each job once", { timeout: 60_000 }, async () => {
    const sluice = backend.sluice({ prefix: uniquePrefix() });
    const throttle = sluice.throttle('burst', { ratePerSecond: 500, capacity: 10, globalRatePerSecond: 1000, keepCompleted: { count: 0 } });
    const ids: string[] = [];
    for (let l = 0; l < 300; l += 50) {
      const round = await Promise.all(Array.from({ length: 50 }, (_, k) => throttle.submit(`k${l + k}`, { l: l + k })));
      for (const r of round) if (r.admitted) ids.push(r.jobId);
    }
    expect(ids).toHaveLength(300);
    const runs = new Map<string, number>();
    const tokens: string[] = [];
    const worker = sluice.worker('burst', (job: ThrottledJob) => {
      runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
      tokens.push(job.raw.token ?? '');
    });
    await until(() => runs.size === 300, 45_000, 'all 300 jobs started');
    await worker.close();
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    // Rounds of several starts were fetched by the extra fetches too (their tokens end in x<n>).
    expect(tokens.filter((t) => /:x\d+$/.test(t)).length).toBeGreaterThan(0);
  });
});
