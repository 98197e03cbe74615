// Property 1: a lane is bounded exactly. With capacity C and 4 processes submitting concurrently to
// one key while no worker runs, exactly C are admitted; the rest are refused with the exact time until
// the lane has room. On a single node and on a 3-master cluster.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { ThrottleProc, type SubmitReply } from '../../helpers/throttle-procs.js';

const CAPACITY = 37;
const RATE = 10; // one start per 100 ms, spaced 1% wider (the default pacing margin): 101 ms
const SLOT_MS = 101;

describe.each(TOPOLOGIES)('lane bound (%s)', (topology) => {
  let backend: Backend;
  let procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend(topology);
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.close()));
    await backend?.dispose();
  });

  async function submitters(prefix: string, n: number) {
    const made = await Promise.all(Array.from({ length: n }, () => ThrottleProc.start(backend, prefix, 'bound', { ratePerSecond: RATE, capacity: CAPACITY })));
    procs.push(...made);
    return made;
  }

  it(`4 processes x 25 concurrent submits on one key: exactly ${CAPACITY} admitted (Redis TIME)`, async () => {
    const ps = await submitters(uniquePrefix(), 4);
    const all = (await Promise.all(ps.map((p) => p.submit(Array.from({ length: 25 }, (_, i) => ({ key: 'hot', payload: { i } })))))).flat();
    const admitted = all.filter((r): r is Extract<SubmitReply, { admitted: true }> => r.admitted);
    expect(admitted.length).toBe(CAPACITY);
    // Each admitted job has its own place and its own start slot, one interval apart.
    expect(new Set(admitted.map((r) => r.position)).size).toBe(CAPACITY);
    const starts = admitted.map((r) => r.startsAtMs).sort((a, b) => a - b);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(SLOT_MS - 1);
    const refused = all.filter((r) => !r.admitted);
    expect(refused.length).toBe(100 - CAPACITY);
    for (const r of refused) expect(r).toMatchObject({ admitted: false, reason: 'queue_full', capacity: CAPACITY });
    expect(Math.max(...procs.slice(-4).map((p) => p.starts.length))).toBe(0); // no worker ran
  });

  it('with injected time, refusals carry the exact time until the lane has room for their cost', async () => {
    const [p] = await submitters(uniquePrefix(), 1);
    const t0 = 1_800_000_000_000;
    const first = await p!.submit(Array.from({ length: CAPACITY }, (_, i) => ({ key: 'k', payload: { i }, nowMs: t0 })));
    expect(first.every((r) => r.admitted)).toBe(true);
    expect(first.map((r) => (r.admitted ? r.startsAtMs - t0 : -1))).toEqual(Array.from({ length: CAPACITY }, (_, i) => i * SLOT_MS));
    // Full, 50 ms later, and no worker has started anything: the head job is due, so the lane's next
    // start is now. Cost 1: room as soon as the head starts (the smallest positive wait).
    // Cost 4: room when the 4th queued job starts, 3 slots after the head.
    const [one, four] = await p!.submit([
      { key: 'k', payload: {}, nowMs: t0 + 50 },
      { key: 'k', payload: {}, cost: 4, nowMs: t0 + 50 },
    ]);
    expect(one).toEqual({ admitted: false, reason: 'queue_full', retryAfterMs: 1, capacity: CAPACITY, queued: CAPACITY });
    expect(four).toEqual({ admitted: false, reason: 'queue_full', retryAfterMs: 3 * SLOT_MS, capacity: CAPACITY, queued: CAPACITY });
  });
});
