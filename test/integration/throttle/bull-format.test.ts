// The job a submit's admission writes (lua/includes/bull-park.lua) is BullMQ's own delayed job: held to
// what BullMQ's queue.add writes for the same job, field by field and key by key (less the marker, which a
// park leaves alone), and to what BullMQ does with it (read back, promote, a worker's run, retry with
// backoff, moveToDelayed, removal, a parked job falling due under a worker blocked since before). A
// BullMQ upgrade that changes its job format fails here, not in production.
import { DelayedError, Job, Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { Throttle } from '../../../src/index.js';
import { PARK_MS } from '../../../src/throttle/dispatcher.js';
import { useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

const ctx = useBackend('single');

const config = {
  ratePerSecond: 5,
  capacity: 50,
  attempts: 3,
  backoff: { type: 'exponential' as const, delayMs: 40 },
  plans: { gold: { ratePerSecond: 10, capacity: 20 } },
};

/** A sluice throttle beside a bare BullMQ queue of the same name on its own prefix (`ref`). */
function pair(name: string): { throttle: Throttle; ref: Queue; raw: Redis; refPrefix: string } {
  const throttle = ctx.backend.sluice().throttle(name, config);
  const raw = ctx.backend.raw as Redis;
  const refPrefix = `ref-${name}`;
  const ref = new Queue(name, { connection: raw.duplicate({ maxRetriesPerRequest: null }), prefix: refPrefix });
  return { throttle, ref, raw, refPrefix };
}

/** What queue.add is given for the job a throttle of `config` parks. */
function refOptions(jobId: string) {
  return { jobId, delay: PARK_MS, attempts: config.attempts, backoff: { type: config.backoff.type, delay: config.backoff.delayMs } };
}

/** Every key under `prefix:<name>:`, by its suffix. */
async function suffixes(raw: Redis, prefix: string, name: string): Promise<string[]> {
  return (await raw.keys(`${prefix}:${name}:*`)).map((k) => k.slice(`${prefix}:${name}:`.length)).sort();
}

/**
 * Runs `body` with a throttle whose queue has a bare BullMQ worker (no dispatcher: nothing hands its jobs
 * out) running `handler`, connected and idle: its first fetch found nothing due, and it blocks on the marker.
 */
async function withIdleBareWorker(name: string, handler: () => unknown, body: (throttle: Throttle, raw: Redis) => Promise<void>): Promise<void> {
  const { throttle, ref, raw } = pair(name);
  await ref.close();
  await throttle.ready();
  const worker = new Worker(throttle.name, async () => handler(), { connection: raw.duplicate({ maxRetriesPerRequest: null }), prefix: throttle.keys.bullPrefix });
  try {
    await worker.waitUntilReady();
    await new Promise((r) => setTimeout(r, 300));
    await body(throttle, raw);
  } finally {
    await worker.close();
  }
}

async function submitted(throttle: Throttle, key: string, payload: unknown, options = {}): Promise<string> {
  const r = await throttle.submit(key, payload, options);
  if (!r.admitted) throw new Error(`not admitted: ${r.reason}`);
  return r.jobId;
}

describe("a parked job is BullMQ's delayed job", () => {
  it('writes the hash fields and delayed score queue.add writes for the same job, and leaves the marker alone', async () => {
    const { throttle, ref, raw, refPrefix } = pair('fmt');
    try {
      const payload = { text: 'héllo "quoted" \u2028', n: [1, 2.5, null], nested: { ok: true } };
      const options = { tenant: 'acme', plan: 'gold', callbackUrl: 'https://example.com/cb', callbackPrivateAllowed: true };
      const jobId = await submitted(throttle, 'k', payload, options);
      const ours = await throttle.bullQueue();
      const data = (await ours.getJob(jobId))!.data;
      // The data BullMQ is given is what the throttle stored: the same object through JSON.
      expect(data).toMatchObject({ l: throttle.keys.laneId('k'), c: 1, p: payload, t: 'acme', pl: 'gold', cb: 'https://example.com/cb', cbp: 1 });
      await ref.add(throttle.name, data, refOptions(jobId));

      const mine = await raw.hgetall(throttle.keys.job(jobId));
      const theirs = await raw.hgetall(`${refPrefix}:${throttle.name}:${jobId}`);
      expect(Object.keys(mine).sort()).toEqual(Object.keys(theirs).sort());
      expect(mine.name).toBe(theirs.name);
      // Byte for byte: the data JSON the script composed is JSON.stringify's.
      expect(mine.data).toBe(theirs.data);
      expect(JSON.parse(mine.opts!)).toEqual(JSON.parse(theirs.opts!));
      expect(mine.delay).toBe(theirs.delay);
      expect(mine.priority).toBe(theirs.priority);
      // Timestamps: Redis's clock here, the adder's there (the same machine): within a second.
      expect(Math.abs(Number(mine.timestamp) - Number(theirs.timestamp))).toBeLessThan(1_000);

      // The delayed set: (timestamp + delay) x 4096, first of its ms. BullMQ moves the marker to the next
      // delayed timestamp; a park does not (it falls due an hour later: the last test below).
      const score = Number(await raw.zscore(`${throttle.keys.jobPrefix}delayed`, jobId));
      const refScore = Number(await raw.zscore(`${refPrefix}:${throttle.name}:delayed`, jobId));
      expect(score).toBe((Number(mine.timestamp) + PARK_MS) * 4096);
      expect(refScore).toBe((Number(theirs.timestamp) + PARK_MS) * 4096);
      expect(await raw.exists(`${throttle.keys.jobPrefix}marker`)).toBe(0);
      expect(await raw.zrange(`${refPrefix}:${throttle.name}:marker`, '0', '-1', 'WITHSCORES')).toEqual(['1', String(refScore / 4096)]);

      // The same keys, but for what nothing reads: BullMQ's event stream ('added', 'delayed'), its id
      // counter (custom ids never use it), its marker and the events cap it keeps in meta.
      const ourKeys = await suffixes(raw, throttle.keys.bullPrefix, throttle.name);
      const refKeys = await suffixes(raw, refPrefix, throttle.name);
      expect(refKeys.filter((k) => !ourKeys.includes(k))).toEqual(['events', 'id', 'marker']);
      expect(ourKeys.filter((k) => !refKeys.includes(k))).toEqual([]);
      expect(Object.keys(await raw.hgetall(`${refPrefix}:${throttle.name}:meta`)).sort()).toEqual(['opts.maxLenEvents', 'version']);
    } finally {
      await ref.close();
    }
  });

  it('jobs parked in the same ms by one script call keep their order in the delayed set, as BullMQ numbers them', async () => {
    const { throttle, ref } = pair('order');
    try {
      const ids = (await Promise.all(Array.from({ length: 20 }, (_, i) => throttle.submit(`k${i}`, { i })))).map((r) => (r.admitted ? r.jobId : ''));
      const raw = ctx.backend.raw as Redis;
      const scored = await raw.zrange(`${throttle.keys.jobPrefix}delayed`, '0', '-1', 'WITHSCORES');
      const order: string[] = [];
      const scores: number[] = [];
      for (let i = 0; i < scored.length; i += 2) {
        order.push(scored[i]!);
        scores.push(Number(scored[i + 1]));
      }
      expect(order).toEqual(ids);
      // BullMQ's numbering: the first job due in a ms at ms x 4096, each next one in the same ms 1 more.
      for (let i = 0; i < scores.length; i++) {
        const ms = Math.floor(scores[i]! / 4096);
        const sameMsBefore = i > 0 && Math.floor(scores[i - 1]! / 4096) === ms;
        expect(scores[i]).toBe(sameMsBefore ? scores[i - 1]! + 1 : ms * 4096);
      }
      // A second batch: numbered within its own call (two calls in one ms may share scores: nothing reads
      // their order, includes/bull-park.lua), each job in its ms.
      const more = (await Promise.all(Array.from({ length: 5 }, (_, i) => throttle.submit(`m${i}`, { i })))).map((r) => (r.admitted ? r.jobId : ''));
      const moreScores = await Promise.all(more.map(async (id) => Number(await raw.zscore(`${throttle.keys.jobPrefix}delayed`, id))));
      for (let i = 0; i < moreScores.length; i++) {
        const ms = Math.floor(moreScores[i]! / 4096);
        const sameMsBefore = i > 0 && Math.floor(moreScores[i - 1]! / 4096) === ms;
        expect(moreScores[i]).toBe(sameMsBefore ? moreScores[i - 1]! + 1 : ms * 4096);
      }
      expect(await raw.zcard(`${throttle.keys.jobPrefix}delayed`)).toBe(ids.length + more.length);
      expect(await raw.exists(`${throttle.keys.jobPrefix}marker`)).toBe(0);
    } finally {
      await ref.close();
    }
  });

  it('two throttles admitting in one batch: each delayed set numbered on its own', async () => {
    const sluice = ctx.backend.sluice();
    const a = sluice.throttle('mix-a', config);
    const b = sluice.throttle('mix-b', config);
    await Promise.all([a.ready(), b.ready()]);
    // Interleaved in one turn of the event loop: one script call runs them in this order.
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 3 === 1 ? b : a).submit(`k${i}`, { i })));
    const raw = ctx.backend.raw as Redis;
    for (const t of [a, b]) {
      const mine = replies.filter((r, i) => (i % 3 === 1 ? b : a) === t).map((r) => (r.admitted ? r.jobId : ''));
      const scored = await raw.zrange(`${t.keys.jobPrefix}delayed`, '0', '-1', 'WITHSCORES');
      const members = scored.filter((_, i) => i % 2 === 0);
      const scores = scored.filter((_, i) => i % 2 === 1).map(Number);
      expect(members).toEqual(mine);
      for (let i = 1; i < scores.length; i++) {
        const sameMs = Math.floor(scores[i]! / 4096) === Math.floor(scores[i - 1]! / 4096);
        expect(scores[i]).toBe(sameMs ? scores[i - 1]! + 1 : Math.floor(scores[i]! / 4096) * 4096);
      }
      expect(await raw.exists(`${t.keys.jobPrefix}marker`)).toBe(0);
    }
  });

  it('reads back through BullMQ as the job queue.add made: name, data, options, delay, state', async () => {
    const { throttle, ref } = pair('read');
    try {
      const jobId = await submitted(throttle, 'k', { a: 1 }, { tenant: 't1' });
      const ours = await throttle.bullQueue();
      const mine = (await Job.fromId(ours, jobId))!;
      await ref.add(throttle.name, mine.data, refOptions(jobId));
      const theirs = (await ref.getJob(jobId))!;
      expect(mine.name).toBe(theirs.name);
      expect(mine.data).toEqual(theirs.data);
      expect(mine.opts).toEqual(theirs.opts);
      expect(mine.delay).toBe(PARK_MS);
      expect(mine.delay).toBe(theirs.delay);
      expect(mine.priority).toBe(theirs.priority);
      expect(mine.attemptsMade).toBe(0);
      expect(await mine.getState()).toBe('delayed');
      expect(await theirs.getState()).toBe('delayed');
      expect(await ours.getDelayedCount()).toBe(1);
    } finally {
      await ref.close();
    }
  });

  it('BullMQ promotes it, a worker runs it, retries it with backoff, and moveToDelayed parks it again', async () => {
    const { throttle, ref } = pair('run');
    await ref.close();
    const queue = await throttle.bullQueue();
    const raw = ctx.backend.raw as Redis;
    const runs: { id: string; attemptsMade: number; atMs: number }[] = [];
    let parkedOnce = false;
    const failId = await submitted(throttle, 'a', { kind: 'fail-once' });
    const parkId = await submitted(throttle, 'b', { kind: 'park-once' });
    const removeId = await submitted(throttle, 'c', { kind: 'removed' });
    // A bare BullMQ worker on the throttle's queue (no dispatcher: only BullMQ moves these jobs).
    const worker = new Worker(
      throttle.name,
      async (job, token) => {
        runs.push({ id: job.id!, attemptsMade: job.attemptsMade, atMs: Date.now() });
        if (job.data.p.kind === 'fail-once' && job.attemptsMade === 0) throw new Error('first try fails');
        if (job.data.p.kind === 'park-once' && !parkedOnce) {
          parkedOnce = true;
          await job.moveToDelayed(Date.now() + 50, token);
          throw new DelayedError();
        }
        return { done: job.data.p.kind };
      },
      { connection: raw.duplicate({ maxRetriesPerRequest: null }), prefix: throttle.keys.bullPrefix, autorun: true },
    );
    try {
      await worker.waitUntilReady();
      await (await queue.getJob(failId))!.promote();
      await (await queue.getJob(parkId))!.promote();
      const failed = (await queue.getJob(failId))!;
      await until(async () => (await failed.getState()) === 'completed', 10_000, 'the retried job to complete');
      const done = (await queue.getJob(failId))!;
      expect(done.attemptsMade).toBe(2);
      expect(done.returnvalue).toEqual({ done: 'fail-once' });
      const tries = runs.filter((r) => r.id === failId);
      expect(tries.map((r) => r.attemptsMade)).toEqual([0, 1]);
      // Exponential backoff of 40 ms: the second try no sooner than 40 ms after the first.
      expect(tries[1]!.atMs - tries[0]!.atMs).toBeGreaterThanOrEqual(38);
      await until(async () => (await (await queue.getJob(parkId))!.getState()) === 'completed', 10_000, 'the parked job to complete');
      expect(runs.filter((r) => r.id === parkId).length).toBe(2);
      // Removal: the job and its member in the delayed set are gone.
      expect(await (await queue.getJob(removeId))!.getState()).toBe('delayed');
      await queue.remove(removeId);
      expect(await queue.getJob(removeId)).toBeUndefined();
      expect(await raw.zscore(`${throttle.keys.jobPrefix}delayed`, removeId)).toBeNull();
    } finally {
      await worker.close();
    }
  });

  it('a parked job that falls due is run by a BullMQ worker blocked since before it, with no marker moved (a lost dispatch comes back)', async () => {
    let ranAt = 0;
    await withIdleBareWorker('due', () => (ranAt = Date.now()), async (throttle, raw) => {
      const jobId = await submitted(throttle, 'a', { kind: 'lost' });
      await new Promise((r) => setTimeout(r, 100));
      expect(ranAt).toBe(0);
      // The hour passes: the job is due now, as a park whose dispatch was lost is after PARK_MS.
      const dueAt = Date.now();
      await raw.zadd(`${throttle.keys.jobPrefix}delayed`, String(dueAt * 4096), jobId);
      await until(async () => ranAt > 0, 15_000, 'the worker to run the due job');
      // At the worker's next fetch: within BullMQ's 10 s block ceiling (and a second for the fetch).
      expect(ranAt - dueAt).toBeLessThan(11_000);
    });
  });

  it('submits do not wake an idle worker blocked on the marker (each park used to answer its BZPOPMIN)', async () => {
    await withIdleBareWorker('idle', () => undefined, async (throttle, raw) => {
      const blockingCalls = async () => Number(/cmdstat_bzpopmin:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0);
      const before = await blockingCalls();
      for (let i = 0; i < 10; i++) {
        await submitted(throttle, `k${i}`, { i });
        await new Promise((r) => setTimeout(r, 30));
      }
      // The worker's one wait, sent before the submits, is still the one it waits in (up to 10 s).
      expect((await blockingCalls()) - before).toBe(0);
      expect(await raw.exists(`${throttle.keys.jobPrefix}marker`)).toBe(0);
    });
  });
});
