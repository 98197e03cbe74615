// The backstop for a lost final event (src/throttle/finish-watch.ts), on a real Redis: one look at every
// job being waited on wakes the watchers of the finished and the gone ones, and only those, in one
// pipeline; a long wait whose job finishes without its event (a plain BullMQ worker, which writes none of
// sluice's events: a sluice worker that died between the transition and its XADD) is answered at the
// next look, not at its timeout; on a cluster, a sharded throttle's shards each look at their own jobs.
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { FINISH_LOOK_MS, FinishWatch } from '../../../src/throttle/finish-watch.js';
import { uniquePrefix, useBackend } from '../../helpers/fixtures.js';

const ctx = useBackend('single');

/** Socket reads Redis made so far (INFO stats): commands written together are read together. */
async function readsProcessed(raw: Redis): Promise<number> {
  return Number(/total_reads_processed:(\d+)/.exec(await raw.info('stats'))?.[1] ?? 0);
}

async function hmgetCalls(raw: Redis): Promise<number> {
  return Number(/cmdstat_hmget:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0);
}

describe('FinishWatch', () => {
  it('wakes the watchers of finished and gone jobs at each look, not the others, until they stop watching', async () => {
    const raw = ctx.backend.raw as Redis;
    const prefix = uniquePrefix('fw');
    const key = (id: string) => `${prefix}:${id}`;
    await raw.hset(key('running'), 'timestamp', '1');
    await raw.hset(key('done'), 'timestamp', '1', 'finishedOn', '2');
    const watch = new FinishWatch(() => raw, key, 60_000);
    const woken: string[] = [];
    const stops = ['running', 'done', 'gone'].map((id) => watch.watch(id, () => woken.push(id)));
    const second = watch.watch('done', () => woken.push('done-2'));
    expect(watch.size).toBe(3);
    await watch.look();
    expect(woken.sort()).toEqual(['done', 'done-2', 'gone']);
    woken.length = 0;
    await raw.hset(key('running'), 'finishedOn', '3');
    second();
    stops[1]!();
    await watch.look();
    expect(woken.sort()).toEqual(['gone', 'running']);
    woken.length = 0;
    for (const stop of stops) stop();
    expect(watch.size).toBe(0);
    await watch.look();
    expect(woken).toEqual([]);
    watch.close();
  });

  it('looks at 2,500 jobs in one pipeline per 1,000: one HMGET each, a few socket reads in all', async () => {
    const raw = ctx.backend.raw as Redis;
    const prefix = uniquePrefix('fw');
    const watch = new FinishWatch(() => raw, (id) => `${prefix}:${id}`, 60_000);
    let woken = 0;
    for (let i = 0; i < 2_500; i++) watch.watch(`j${i}`, () => void woken++);
    const [calls0, reads0] = [await hmgetCalls(raw), await readsProcessed(raw)];
    await watch.look();
    const [calls1, reads1] = [await hmgetCalls(raw), await readsProcessed(raw)];
    // Every job is gone here (no hash): each is woken once.
    expect(woken).toBe(2_500);
    expect(calls1 - calls0).toBe(2_500);
    // One read per command would be 2,500; a pipeline of 1,000 arrives in a few reads (the INFO calls count too).
    expect(reads1 - reads0).toBeLessThan(40);
    watch.close();
  });
});

describe('a wait whose job finishes without its final event', () => {
  it('is answered at the next look (within 5 s), completed or gone, instead of at its timeout', async () => {
    const sluice = ctx.backend.sluice();
    const throttle = sluice.throttle('fw', { ratePerSecond: 10, capacity: 5 });
    const a = await throttle.submit('k', { n: 1 });
    const b = await throttle.submit('k', { n: 2 });
    if (!a.admitted || !b.admitted) throw new Error('not admitted');
    const t0 = performance.now();
    const waitFor = (jobId: string) => throttle.waitForJob(jobId, { timeoutMs: 30_000 }).then((status) => ({ status, ms: performance.now() - t0 }));
    const waits = Promise.all([waitFor(a.jobId), waitFor(b.jobId)] as const);
    // Both waits read their status (queued) and sleep.
    await new Promise((r) => setTimeout(r, 300));
    // A plain BullMQ worker on the throttle's queue: the job completes, and no sluice event says so.
    const connection = { host: '127.0.0.1', port: ctx.backend.server!.port };
    const queue = new Queue(throttle.name, { connection, prefix: throttle.keys.bullPrefix });
    const worker = new Worker(throttle.name, async () => ({ silent: true }), { connection, prefix: throttle.keys.bullPrefix });
    try {
      await (await queue.getJob(a.jobId))!.promote();
      // The other job is removed behind sluice's back (no `cancelled` event).
      await (await queue.getJob(b.jobId))!.remove();
      const [doneA, doneB] = await waits;
      expect(doneA.status?.state).toBe('completed');
      expect(doneA.status?.result).toEqual({ silent: true });
      expect(doneB.status).toBeNull();
      // Answered by a look (every FINISH_LOOK_MS), not by the 30 s timeout.
      for (const d of [doneA, doneB]) expect(d.ms).toBeLessThan(FINISH_LOOK_MS + 3_000);
      // No final event was written: the answer came from the look.
      const events = await (ctx.backend.raw as Redis).xrange(throttle.keys.events, '-', '+');
      expect(events.map(([, fields]) => fields[1])).not.toContain('completed');
      expect(events.map(([, fields]) => fields[1])).not.toContain('cancelled');
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});

describe('on a 3-master cluster', () => {
  const cluster = useBackend('cluster');

  it("a sharded throttle's wait is answered at its shard's look when the job is gone without an event", async () => {
    const sluice = cluster.backend.sluice();
    const throttle = sluice.throttle('fw', { ratePerSecond: 10, capacity: 5, shards: 3 });
    const submitted = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((k) => throttle.submit(k, { k })));
    const ids = submitted.map((r) => (r.admitted ? r.jobId : ''));
    expect(ids.every(Boolean)).toBe(true);
    // The jobs of more than one shard are waited on (each shard looks at its own, in its own slot).
    expect(new Set(ids.map((id) => throttle.forJob(id)!.keys.global)).size).toBeGreaterThan(1);
    const t0 = performance.now();
    const waits = Promise.all(ids.map((id) => throttle.waitForJob(id, { timeoutMs: 30_000 })));
    await new Promise((r) => setTimeout(r, 300));
    const raw = cluster.backend.raw;
    for (const id of ids) {
      const shard = throttle.forJob(id)!;
      await raw.del(shard.keys.job(id));
      await raw.zrem(`${shard.keys.jobPrefix}delayed`, id);
    }
    expect(await waits).toEqual(ids.map(() => null));
    expect(performance.now() - t0).toBeLessThan(FINISH_LOOK_MS + 3_000);
  });
});
