// Batched admissions (docs/decisions/batched-admissions.md): the submits of one turn of the event loop
// are admitted by one script call (their jobs are then added one by one). Several OS processes, each
// sending its submits in batches, keep every lane's bound exact, admit an idempotency key once, and
// leave no ghost: every BullMQ job has its lane unit and every lane unit its job. On a single node
// (where batching happens) and on a 3-master cluster (where each admission goes alone).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import type { Sluice, Throttle } from '../../../src/index.js';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { ThrottleProc } from '../../helpers/throttle-procs.js';

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

  it.runIf(topology === 'single')('the admissions of one turn take one script call', async () => {
    const sluice = backend.sluice();
    const throttle = sluice.throttle('one-call', { ratePerSecond: 5, capacity: 100 });
    await throttle.submit('warm', {}); // queue made, config published, scripts loaded
    await Promise.all([throttle.submit('warm', {}), throttle.submit('warm', {})]); // the batched form loaded
    const raw = backend.raw as Redis;
    await raw.config('RESETSTAT');
    const replies = await Promise.all(Array.from({ length: 30 }, (_, i) => throttle.submit(`k${i % 3}`, { i })));
    expect(replies.every((r) => r.admitted)).toBe(true);
    const stats = await raw.info('commandstats');
    const calls = (cmd: string) => Number(new RegExp(`cmdstat_${cmd}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
    // One admission script call for the 30 submits, then one BullMQ add script per job.
    expect(calls('evalsha') + calls('eval')).toBe(1 + 30);
  });
});
