// The dispatch script hands the jobs it chose to BullMQ's workers itself, in the same atomic step (what
// BullMQ's promote does). Held to BullMQ: a throttled job moved by one dispatch round and one moved by
// BullMQ's own promote leave BullMQ's keys the same (wait list, delayed set, marker, the `waiting`
// event, the job hash); a job not in the delayed set is left alone; a BullMQ queue with a global
// concurrency used up gets no marker, as BullMQ's promote leaves it; a worker runs each dispatched job once.
// This test is what catches a BullMQ upgrade that changes its promote.
import { describe, expect, it } from 'vitest';
import type { Throttle } from '../../../src/index.js';
import type { RedisClient } from '../../../src/redis/connection.js';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

let run = 0;

/** BullMQ's keys of a throttle's queue, as one comparable picture (ids and timestamps named, not valued). */
async function picture(raw: RedisClient, throttle: Throttle, jobId: string) {
  const p = throttle.keys.jobPrefix;
  const job = await raw.hgetall(`${p}${jobId}`);
  const events = (await raw.xrange(`${p}events`, '-', '+')).map(([, fields]) => fields.map((f) => (f === jobId ? '<job>' : f)));
  const marker = await raw.zrange(`${p}marker`, '0', '-1', 'WITHSCORES');
  const { jobId: _id, ...opts } = JSON.parse(job.opts ?? '{}') as Record<string, unknown>;
  return {
    wait: (await raw.lrange(`${p}wait`, '0', '-1')).map((id) => (id === jobId ? '<job>' : id)),
    delayed: await raw.zrange(`${p}delayed`, '0', '-1'),
    // Member '0': a job is waiting; '1' scored by the next delayed job's time (written when it was parked).
    marker: marker.map((v, i) => (i % 2 === 1 && marker[i - 1] === '1' ? '<time>' : v)),
    lastEvent: events.at(-1),
    job: { ...job, name: job.name === throttle.name ? '<queue>' : job.name, opts, timestamp: typeof job.timestamp, data: typeof job.data } as Record<string, unknown>,
  };
}

describe.each(TOPOLOGIES)("dispatch hands jobs to BullMQ as BullMQ's promote does, %s Redis", (topology) => {
  const ctx = useBackend(topology);

  it('the same wait list, delayed set, marker, event and job hash', async () => {
    const config = { ratePerSecond: 10, capacity: 5 };
    const mine = ctx.sluice.throttle(`promote${run++}`, config);
    const bulls = ctx.sluice.throttle(`promote${run++}`, config);
    const a = await mine.submit('k', { n: 1 });
    const b = await bulls.submit('k', { n: 1 });
    if (!a.admitted || !b.admitted) throw new Error('not admitted');
    // Parked: both in BullMQ's delayed set.
    expect(await ctx.backend.raw.zrange(`${mine.keys.jobPrefix}delayed`, '0', '-1')).toEqual([a.jobId]);

    const round = await mine.gateLanes.dispatch(10);
    expect(round.jobs.map((j) => j.jobId)).toEqual([a.jobId]);
    await (await bulls.bullQueue()).backend.promote(b.jobId);

    const got = await picture(ctx.backend.raw, mine, a.jobId);
    const want = await picture(ctx.backend.raw, bulls, b.jobId);
    expect(got).toEqual(want);
    expect(got.wait).toEqual(['<job>']);
    expect(got.delayed).toEqual([]);
    expect(got.lastEvent).toEqual(['event', 'waiting', 'jobId', '<job>', 'prev', 'delayed']);
    expect(got.job.delay).toBe('0');
  });

  it('a job not in the delayed set is not moved; a used-up global concurrency gets no marker', async () => {
    const throttle = ctx.sluice.throttle(`promote${run++}`, { ratePerSecond: 10, capacity: 5 });
    const p = throttle.keys.jobPrefix;
    const r = await throttle.submit('k', {});
    if (!r.admitted) throw new Error('not admitted');
    // A worker is parking it right now: the job exists but is not in the delayed set yet.
    await ctx.backend.raw.zrem(`${p}delayed`, r.jobId);
    const round = await throttle.gateLanes.dispatch(10);
    expect(round.jobs.map((j) => j.jobId)).toEqual([r.jobId]);
    expect(await ctx.backend.raw.llen(`${p}wait`)).toBe(0);
    // Left to lane repair: it stays among the jobs handed out.
    expect(await ctx.backend.raw.zcard(throttle.keys.dispatched)).toBe(1);

    const queue = await throttle.bullQueue();
    await queue.setGlobalConcurrency(1);
    await ctx.backend.raw.lpush(`${p}active`, 'someone');
    const s = await throttle.submit('other', {});
    if (!s.admitted) throw new Error('not admitted');
    await ctx.backend.raw.del(`${p}marker`);
    expect((await throttle.gateLanes.dispatch(10)).jobs.map((j) => j.jobId)).toEqual([s.jobId]);
    expect(await ctx.backend.raw.lrange(`${p}wait`, '0', '-1')).toEqual([s.jobId]);
    expect(await ctx.backend.raw.exists(`${p}marker`)).toBe(0);
  });

  it('a worker runs the jobs a dispatch handed out, each once', async () => {
    const name = `promote${run++}`;
    const throttle = ctx.sluice.throttle(name, { ratePerSecond: 200, capacity: 50 });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await throttle.submit('k', { i });
      if (!r.admitted) throw new Error('not admitted');
      ids.push(r.jobId);
    }
    const ran: number[] = [];
    let done!: () => void;
    const all = new Promise<void>((resolve) => (done = resolve));
    const worker = ctx.sluice.worker(name, (job) => {
      ran.push((job.data as { i: number }).i);
      if (ran.length === 20) done();
    });
    await all;
    await worker.close();
    // Each once (the order is the timing tests' subject: a start that comes late goes back to its lane).
    expect([...ran].sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const queue = await throttle.bullQueue();
    expect(await queue.getJobCounts('completed', 'delayed', 'wait', 'active')).toEqual({ completed: 20, delayed: 0, wait: 0, active: 0 });
  });
});
