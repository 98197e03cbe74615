// BullMQ's moveToActive adds its base marker (member '0' of the queue's marker set) for every job it
// hands a worker, so that a worker blocked on the marker looks for the next one. The start gate's call,
// which follows every fetch, takes that marker out while the wait list is empty (lua/throttle-start.lua):
// otherwise the worker that fetched the job wakes at once for a fetch that finds nothing. Held here to
// BullMQ's own moveToActive (a BullMQ worker fetching by hand): the marker goes once nothing waits, stays
// while a job waits (no wake is lost), a delay marker (member '1') stays, and the next hand-out brings
// its own marker.
import { Worker } from 'bullmq';
import { afterEach, describe, expect, it } from 'vitest';
import type { Throttle } from '../../../src/index.js';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

let run = 0;

describe.each(TOPOLOGIES)("the start gate takes BullMQ's base marker out when nothing waits, %s Redis", (topology) => {
  const ctx = useBackend(topology);
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close()));
  });

  /** A BullMQ worker of the throttle's queue that fetches only when asked (no processor, no blocking). */
  async function fetcher(throttle: Throttle): Promise<Worker> {
    const queue = await throttle.bullQueue();
    const worker = new Worker(throttle.name, null, { connection: queue.opts.connection, prefix: throttle.keys.bullPrefix, autorun: false });
    workers.push(worker);
    await worker.waitUntilReady();
    return worker;
  }

  const markers = (throttle: Throttle) => ctx.backend.raw.zrange(`${throttle.keys.jobPrefix}marker`, '0', '-1');

  it('goes once the wait list is empty, stays while a job waits, and a delay marker stays', async () => {
    const throttle = ctx.sluice.throttle(`marker${run++}`, { ratePerSecond: 1000, capacity: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const r = await throttle.submit('k', { i });
      if (!r.admitted) throw new Error('not admitted');
      ids.push(r.jobId);
    }
    // A delay marker, as BullMQ writes one for its next delayed job: not the gate's to take.
    await ctx.backend.raw.zadd(`${throttle.keys.jobPrefix}marker`, String(Date.now() + 3_600_000), '1');
    expect((await throttle.gateLanes.dispatch(10)).jobs.map((j) => j.jobId)).toEqual(ids);
    expect(await markers(throttle)).toEqual(['0', '1']);

    const worker = await fetcher(throttle);
    const first = await worker.getNextJob('t1', { block: false });
    expect(first?.id).toBe(ids[0]);
    // BullMQ's fetch marked the next one (whether or not one is there).
    expect(await markers(throttle)).toEqual(['0', '1']);
    const gate1 = await throttle.gateLanes.start('k', ids[0]!, 1);
    expect(gate1.go).toBe(true);
    // The second job still waits: its marker stays, so a blocked worker still comes for it.
    expect(await ctx.backend.raw.llen(`${throttle.keys.jobPrefix}wait`)).toBe(1);
    expect(await markers(throttle)).toEqual(['0', '1']);

    const second = await worker.getNextJob('t2', { block: false });
    expect(second?.id).toBe(ids[1]);
    expect(await markers(throttle)).toEqual(['0', '1']);
    const gate2 = await throttle.gateLanes.start('k', ids[1]!, 1);
    expect(gate2.go).toBe(true);
    // Nothing waits: the base marker is gone, the delay marker is not.
    expect(await markers(throttle)).toEqual(['1']);

    // The next hand-out brings its own marker.
    const r = await throttle.submit('k', { i: 2 });
    if (!r.admitted) throw new Error('not admitted');
    expect((await throttle.gateLanes.dispatch(10)).jobs.map((j) => j.jobId)).toEqual([r.jobId]);
    expect(await markers(throttle)).toEqual(['0', '1']);
  });

  it("a call that follows no fetch leaves BullMQ's marker alone", async () => {
    const throttle = ctx.sluice.throttle(`marker${run++}`, { ratePerSecond: 1000, capacity: 10 });
    const r = await throttle.submit('k', {});
    if (!r.admitted) throw new Error('not admitted');
    await ctx.backend.raw.zadd(`${throttle.keys.jobPrefix}marker`, '0', '0');
    // 'mark' is a worker about to park a job it started: not a fetch, so the gate leaves the marker.
    await throttle.gateLanes.start('k', r.jobId, 1, { mode: 'mark' });
    expect(await markers(throttle)).toEqual(['0']);
  });
});
