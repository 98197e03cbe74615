// Batched admissions (docs/decisions/batched-admissions.md): the submits of one turn of the event loop
// are admitted by one script call, which writes their jobs too. Several OS processes, each
// sending its submits in batches, keep every lane's bound exact, admit an idempotency key once, and
// leave no ghost: every BullMQ job has its lane unit and every lane unit its job. On a single node
// and on a 3-master cluster (batched per slot: one call per throttle, or per shard of a sharded one).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import type { Sluice, Throttle } from '../../../src/index.js';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { ThrottleProc } from '../../helpers/throttle-procs.js';
import { scriptCallsIn } from '../../helpers/script-calls.js';
import { shardOfLane } from '../../../src/throttle/shards.js';

const CAPACITY = 17;
const KEYS = ['k0', 'k1', 'k2'];
const CONFIG = { ratePerSecond: 5, capacity: CAPACITY };

/** The job ids queued in `key`'s lane (its members are "<job id>|<cost>"). */
async function laneJobIds(raw: Redis | Cluster, throttle: Throttle, key: string): Promise<string[]> {
  const members = await raw.zrange(throttle.keys.laneQueue(throttle.keys.laneId(key, {})), '0', '-1');
  return members.map((m) => m.slice(0, m.lastIndexOf('|')));
}

/** Jobs in the throttle's BullMQ queue, in any state, by lane. */
async function bullJobsByLane(throttle: Throttle): Promise<Map<string, string[]>> {
  const queue = await throttle.bullQueue();
  const jobs = await queue.getJobs(['delayed', 'wait', 'active', 'prioritized', 'completed', 'failed']);
  const byLane = new Map<string, string[]>();
  for (const job of jobs) byLane.set(job.data.l, [...(byLane.get(job.data.l) ?? []), job.id!]);
  return byLane;
}

describe.each(TOPOLOGIES)('batched admissions (%s)', (topology) => {
  let backend: Backend;
  const procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend(topology);
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.close()));
    await backend?.dispose();
  });

  it(`4 processes x 60 submits in one turn each over 3 keys: exactly ${CAPACITY} a lane, and no job without its unit nor unit without its job`, async () => {
    const prefix = uniquePrefix();
    const ps = await Promise.all(Array.from({ length: 4 }, () => ThrottleProc.start(backend, prefix, 'batched', CONFIG)));
    procs.push(...ps);
    const items = (p: number) => Array.from({ length: 60 }, (_, i) => ({ key: KEYS[i % KEYS.length]!, payload: { p, i } }));
    // Each process also submits the same 10 idempotency keys into their own lane.
    const idem = Array.from({ length: 10 }, (_, i) => ({ key: 'idem', payload: { i }, id: `idem-${i}` }));
    const replies = await Promise.all(ps.map((p, n) => p.submit([...items(n), ...idem])));
    const plain = replies.flatMap((r) => r.slice(0, 60));
    const idemReplies = replies.map((r) => r.slice(60));

    const sluice: Sluice = backend.sluice({ prefix });
    const throttle = sluice.throttle('batched', CONFIG);
    const byLane = await bullJobsByLane(throttle);
    for (const key of KEYS) {
      const laneId = throttle.keys.laneId(key, {});
      const inLane = (await laneJobIds(backend.raw, throttle, key)).sort();
      expect(inLane.length).toBe(CAPACITY);
      // No ghost: the lane's units and the queue's jobs are the same set.
      expect((byLane.get(laneId) ?? []).sort()).toEqual(inLane);
    }
    expect(plain.filter((r) => r.admitted).length).toBe(KEYS.length * CAPACITY);
    expect(plain.filter((r) => !r.admitted).length).toBe(4 * 60 - KEYS.length * CAPACITY);
    // Each idempotency key: one job, admitted once; the three other submits are told it is a duplicate.
    const idemIds: string[] = [];
    for (let i = 0; i < idem.length; i++) {
      const mine = idemReplies.map((r) => r[i]!);
      expect(mine.every((r) => r.admitted)).toBe(true);
      const ids = new Set(mine.map((r) => (r.admitted ? r.jobId : '')));
      expect(ids.size).toBe(1);
      expect(mine.filter((r) => r.admitted && !r.duplicate).length).toBe(1);
      idemIds.push(...ids);
    }
    const idemLane = throttle.keys.laneId('idem', {});
    expect((byLane.get(idemLane) ?? []).sort()).toEqual([...idemIds].sort());
    expect((await laneJobIds(backend.raw, throttle, 'idem')).sort()).toEqual([...idemIds].sort());
    // Nothing else is in the queue.
    expect([...byLane.values()].flat().length).toBe(KEYS.length * CAPACITY + idem.length);
  });

  it('admissions into one lane in one turn: positions 0, 1, 2, ... and the lane queue in their order, behind what was queued', async () => {
    const throttle = backend.sluice().throttle('one-lane', { ratePerSecond: 10, capacity: 1_000 });
    const first = await throttle.submit('hot', { i: -1 });
    expect(first.admitted && first.position).toBe(0);
    const replies = await Promise.all(Array.from({ length: 40 }, (_, i) => throttle.submit('hot', { i })));
    expect(replies.map((r) => (r.admitted ? r.position : -1))).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    const starts = replies.map((r) => (r.admitted ? r.startsAtMs : 0));
    // 10/s: each next job 100 ms later than the one before it.
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(99);
    const ids = [first, ...replies].map((r) => (r.admitted ? r.jobId : ''));
    expect(await laneJobIds(backend.raw, throttle, 'hot')).toEqual(ids);
    // The bound inside one batch: a lane of capacity 10 takes 10 of 15 submits of one turn.
    const small = backend.sluice().throttle('one-lane-small', { ratePerSecond: 10, capacity: 10 });
    const batch = await Promise.all(Array.from({ length: 15 }, (_, i) => small.submit('hot', { i })));
    expect(batch.map((r) => (r.admitted ? r.position : r.reason))).toEqual([...Array.from({ length: 10 }, (_, i) => i), ...Array(5).fill('queue_full')]);
    expect((await small.lane('hot')).depth).toBe(10);
    expect((await laneJobIds(backend.raw, small, 'hot')).length).toBe(10);
  });

  it('the admissions of one turn take one script call (on a cluster: one per shard of a sharded throttle)', async () => {
    const sluice = backend.sluice();
    const shards = topology === 'single' ? 1 : 3;
    const throttle = sluice.throttle('one-call', { ratePerSecond: 5, capacity: 100, shards });
    // Keys of every shard.
    const keys: string[] = [];
    for (let s = 0; s < shards; s++) {
      let i = 0;
      while (shardOfLane(`k${i}`, shards) !== s) i++;
      keys.push(`k${i}`);
    }
    await Promise.all(keys.map((k) => throttle.submit(k, {}))); // queues made, config published, scripts loaded
    await Promise.all(keys.flatMap((k) => [throttle.submit(k, {}), throttle.submit(k, {})])); // the batched form loaded
    const masters = topology === 'single' ? [backend.raw as Redis] : (backend.raw as Cluster).nodes('master');
    await Promise.all(masters.map((m) => m.config('RESETSTAT')));
    const replies = await Promise.all(Array.from({ length: 30 }, (_, i) => throttle.submit(keys[i % keys.length]!, { i })));
    expect(replies.every((r) => r.admitted)).toBe(true);
    let scriptCalls = 0;
    for (const m of masters) {
      scriptCalls += scriptCallsIn(await m.info('commandstats'));
    }
    // One admission script call per shard for the 30 submits: it writes their BullMQ jobs too.
    expect(scriptCalls).toBe(shards);
  });
});
