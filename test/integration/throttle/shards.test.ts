// A throttle split into shards (`shards: 3`) on a real 3-master cluster: the shards land on three
// masters; a lane lives in one shard, so its bound stays exact under concurrent submitters in several
// processes and its jobs start in FIFO order across worker processes; lanes of different shards hold
// their own bounds; lookups by job id find the job's shard; the global cap is divided by demand.
// (How many starts a second the shards make together under the cap: shards.timing.test.ts.)
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThrottledJob } from '../../../src/index.js';
import { shardOfLane } from '../../../src/throttle/shards.js';
import { ThrottleKeys } from '../../../src/throttle/keys.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { lanesInShard } from '../../helpers/shard-lanes.js';
import { ThrottleProc, until, type SubmitReply } from '../../helpers/throttle-procs.js';

const SHARDS = 3;
const CAPACITY = 23;

/** Short keys (their own lane ids) in shard 0, 1 and 2. */
function keysPerShard(prefix: string): string[] {
  return Array.from({ length: SHARDS }, (_, s) => lanesInShard(s, 1, prefix, SHARDS)[0]!);
}

describe('sharded throttle on a 3-master cluster', () => {
  let backend: Backend;
  const procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend('cluster');
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.close()));
    await backend?.dispose();
  });

  it('the shards of a throttle land on three different masters', async () => {
    const sluice = backend.sluice();
    const throttle = sluice.throttle('spread', { ratePerSecond: 10, capacity: 10, shards: SHARDS });
    const ranges = (await (backend.raw as import('ioredis').Cluster).cluster('SLOTS')) as unknown as [number, number, [string, number]][];
    const masterOf = (slot: number) => {
      const r = ranges.find(([from, to]) => slot >= from && slot <= to)!;
      return `${r[2][0]}:${r[2][1]}`;
    };
    const tags = throttle.shards.map((s) => s.keys.tag);
    expect(new Set(tags).size).toBe(SHARDS);
    const masters = tags.map((t) => masterOf(calculateSlot(t)));
    expect(new Set(masters).size).toBe(SHARDS);
    // Every key of a shard is in its tag's slot (the scripts touch one slot each).
    for (const s of throttle.shards) expect(calculateSlot(s.keys.jobPrefix + 'x')).toBe(calculateSlot(s.keys.tag));
    // shards: 1 keeps today's one tag.
    expect(sluice.throttle('plain', { ratePerSecond: 10, capacity: 10 }).shards.map((s) => s.keys.tag)).toEqual([new ThrottleKeys(sluice.keys, 'plain').tag]);
  });

  it(`4 processes x 20 concurrent submits on one key: exactly ${CAPACITY} admitted; lanes of the 3 shards each hold their own bound`, async () => {
    const prefix = uniquePrefix();
    // A generous deadline: four processes making their first cluster connections on a loaded machine.
    const config = { ratePerSecond: 5, capacity: CAPACITY, shards: SHARDS, submitTimeoutMs: 20_000 };
    const ps = await Promise.all(Array.from({ length: 4 }, () => ThrottleProc.start(backend, prefix, 'bound', config)));
    procs.push(...ps);
    const keys = keysPerShard('lane');
    // Every process submits 20 jobs to the hot key and 10 to each of the three keys, all at once.
    const all = await Promise.all(
      ps.map((p) => p.submit([...Array.from({ length: 20 }, (_, i) => ({ key: 'hot', payload: { i } })), ...keys.flatMap((key) => Array.from({ length: 10 }, (_, i) => ({ key, payload: { i } })))])),
    );
    const replies = all.flat();
    const admittedOf = (key: string) =>
      ps.flatMap((_, p) => all[p]!.filter((_, j) => (j < 20 ? 'hot' : keys[Math.floor((j - 20) / 10)]) === key)).filter((r): r is Extract<SubmitReply, { admitted: true }> => r.admitted);
    expect(admittedOf('hot').length).toBe(CAPACITY);
    expect(new Set(admittedOf('hot').map((r) => r.position)).size).toBe(CAPACITY);
    for (const [s, key] of keys.entries()) {
      const admitted = admittedOf(key);
      expect(admitted.length).toBe(CAPACITY);
      // Each job id names its lane's shard.
      for (const r of admitted) expect(r.jobId.endsWith(`.s${s}`)).toBe(true);
    }
    expect(replies.filter((r) => !r.admitted).length).toBe(4 * 50 - 4 * CAPACITY);
    for (const r of replies.filter((x) => !x.admitted)) expect(r).toMatchObject({ reason: 'queue_full', capacity: CAPACITY });
    // The lanes are where their shard's keys are: the busy sets of the three shards.
    const sluice = backend.sluice({ prefix });
    const throttle = sluice.throttle('bound', config);
    const busy = await Promise.all(throttle.shards.map((s) => backend.raw.zrange(s.keys.busy, '0', '-1')));
    for (const [s, key] of keys.entries()) expect(busy[s]).toContain(key);
    expect(busy[shardOfLane('hot', SHARDS)]).toContain('hot');
    expect(busy.flat().length).toBe(4);
    expect(await throttle.lane('hot')).toMatchObject({ depth: CAPACITY, jobs: CAPACITY, capacity: CAPACITY });
   }, 60_000);

  it('one lane starts in FIFO order across 2 worker processes, with lanes of every shard running', async () => {
    const prefix = uniquePrefix();
    // 5/s: a job's successor is handed out 150 ms after the job's start at the earliest, so only a worker
    // 150 ms late for a start meets the documented exception to FIFO (docs/algorithms.md: a job late
    // for its start whose successor was already handed out goes back behind it).
    const config = { ratePerSecond: 5, capacity: 100, shards: SHARDS, submitTimeoutMs: 20_000 };
    const [submitter, w1, w2] = await Promise.all([0, 1, 2].map(() => ThrottleProc.start(backend, prefix, 'fifo', config)));
    procs.push(submitter!, w1!, w2!);
    await Promise.all([w1!.worker(4), w2!.worker(4)]);
    const others = keysPerShard('o');
    const N = 20;
    // One by one, so the submit order is the order of admission.
    for (let i = 0; i < N; i++) {
      const [r, ...rest] = await submitter!.submit([{ key: 'ordered', payload: { tag: `f${i}` } }, ...others.map((key) => ({ key, payload: { tag: `${key}-${i}` } }))]);
      expect(r!.admitted).toBe(true);
      expect(rest.every((x) => x.admitted)).toBe(true);
    }
    const starts = () => [...w1!.starts, ...w2!.starts];
    await until(() => starts().length >= N * (1 + others.length), 30_000, 'every job started');
    const fifo = starts()
      .filter((s) => s.tag?.startsWith('f'))
      .sort((a, b) => a.slot - b.slot || a.t - b.t);
    if (fifo.some((s, i) => s.tag !== `f${i}`)) console.log(JSON.stringify(fifo.map((s) => [s.tag, s.slot, Math.round(s.t), s.attempt, s.pid])));
    expect(fifo.map((s) => s.tag)).toEqual(Array.from({ length: N }, (_, i) => `f${i}`));
    // Both processes took part, and every shard's lane ran.
    expect(new Set(starts().map((s) => s.pid)).size).toBe(2);
    for (const key of others) expect(starts().filter((s) => s.lane === key).length).toBe(N);
   }, 60_000);

  it('job status, results and cancel find the job in its shard; an id naming no shard is unknown', async () => {
    const sluice = backend.sluice();
    const throttle = sluice.throttle('lookup', { ratePerSecond: 50, capacity: 10, shards: SHARDS });
    const keys = keysPerShard('k');
    const ids: string[] = [];
    for (const key of keys) {
      const r = await throttle.submit(key, { key });
      if (!r.admitted) throw new Error('refused');
      ids.push(r.jobId);
    }
    for (const [s, id] of ids.entries()) expect(await throttle.job(id)).toMatchObject({ state: 'queued', lane: keys[s] });
    expect(await throttle.job(ids[0]!.replace(/\.s\d+$/, ''))).toBeNull();
    expect(await throttle.job(`${ids[0]!.replace(/\.s\d+$/, '')}.s9`)).toBeNull();
    // The throttle's events: every job's (from every shard), and one job's.
    const seen: string[] = [];
    const offAll = await throttle.events.subscribe((e) => e.type === 'completed' && seen.push(e.jobId));
    const mine: string[] = [];
    const offOne = await throttle.events.subscribe((e) => mine.push(`${e.type}:${e.jobId}`), { jobId: ids[2]! });
    const worker = sluice.worker('lookup', (job: ThrottledJob<{ key: string }>) => ({ ran: job.data.key }), { concurrency: 3 });
    await worker.waitUntilReady();
    for (const [s, id] of ids.entries()) expect(await throttle.waitForResult(id, { timeoutMs: 10_000 })).toEqual({ ran: keys[s] });
    await until(() => seen.length === 3 && mine.includes(`completed:${ids[2]}`), 5_000, 'the completed events');
    expect(new Set(seen)).toEqual(new Set(ids));
    expect(mine).toEqual([`started:${ids[2]}`, `completed:${ids[2]}`]);
    offAll();
    offOne();
    await worker.close();
    // Idempotency keys: the same id on the same lane is one job.
    const a = await throttle.submit(keys[1]!, {}, { id: 'order-1' });
    const b = await throttle.submit(keys[1]!, {}, { id: 'order-1' });
    expect(a.admitted && b.admitted && b.jobId === a.jobId && b.duplicate).toBe(true);
  });

  it('the global cap is divided by demand: 1 busy lane in one shard, 9 in another, none in the third', async () => {
    const sluice = backend.sluice();
    const throttle = sluice.throttle('cap', { ratePerSecond: 20, capacity: 50, globalRatePerSecond: 100, shards: SHARDS });
    // Lanes of shard 0 (one) and shard 1 (nine); no worker runs, so they stay busy.
    const inShard = (s: number, n: number) => lanesInShard(s, n, 'c', SHARDS);
    for (const key of [...inShard(0, 1), ...inShard(1, 9)]) expect((await throttle.submit(key, {})).admitted).toBe(true);
    const allocator = throttle.shareAllocator!;
    expect((await allocator.read()).map((s) => [s.busyLanes, Math.round(s.demand)])).toEqual([
      [1, 20],
      [9, 180],
      [0, 0],
    ]);
    // Every lane gets the same fraction of its rate (100 / 200): 10 and 90, less the idle shard's 1 a second.
    expect(await allocator.divide()).toEqual([10, 89, 1]);
    const xi = await Promise.all(throttle.shards.map((s) => backend.raw.hget(s.keys.global, 'xi')));
    expect(xi.map(Number)).toEqual([100_000, Math.round(1e6 / 89), 1_000_000]);
    expect((await allocator.read()).map((s) => s.share)).toEqual([10, 89, 1]);
    // A pause of the whole throttle (an upstream's Retry-After, DeferJob scope 'global') holds every shard.
    const before = Date.now() * 1000;
    const resume = await throttle.pause(inShard(0, 1)[0]!, 5_000, 'global');
    const paused = (await Promise.all(throttle.shards.map((s) => backend.raw.hget(s.keys.global, 'p')))).map(Number);
    // Each master's own clock, read a moment apart: the latest is the answer.
    expect(Math.max(...paused)).toBe(resume);
    for (const p of paused) expect(p).toBeGreaterThanOrEqual(before + 4_900_000);
    // The demand shifts: shard 2 gets 5 busy lanes.
    for (const key of inShard(2, 5)) expect((await throttle.submit(key, {})).admitted).toBe(true);
    // 20 + 180 + 100 asked: a third of each.
    expect(await allocator.divide()).toEqual([7, 60, 33]);
  });

  it("a queue's upstream budget is divided among the shards as the cap is (else evenly)", async () => {
    const sluice = backend.sluice();
    const throttle = sluice.throttle('budget', { ratePerSecond: 20, capacity: 50, globalRatePerSecond: 100, shards: SHARDS, upstream: { learn: true } });
    const inShard = (s: number, n: number) => lanesInShard(s, n, 'b', SHARDS);
    for (const key of [...inShard(0, 1), ...inShard(1, 9)]) expect((await throttle.submit(key, {})).admitted).toBe(true);
    expect(await throttle.shareAllocator!.divide()).toEqual([10, 89, 1]);
    // The upstream says 200 calls are left for the next 10 s, to a call of each shard.
    const ui = async (s: number) => {
      const lane = inShard(s, 1)[0]!;
      const outcome = await throttle.forLane(lane).upstream.report(lane, { remaining: 200, resetMs: 10_000 }, 0);
      expect(outcome.event).toBe('budget');
      return outcome.result!.ui;
    };
    // Shard 1 holds 89 of the 100: it paces by 178 of the 200 (10 s / 178), shard 0 by 20, shard 2 by 2.
    expect([await ui(0), await ui(1), await ui(2)]).toEqual([500_000, Math.floor(10_000_000 / 178), 5_000_000]);
    // With no share written (no allocator ran for 3 s), a third each.
    await Promise.all(throttle.shards.map((t) => backend.raw.hdel(t.keys.global, 'xi', 'xe')));
    expect(await ui(1)).toBe(Math.floor(10_000_000 / 66));
  });
});
