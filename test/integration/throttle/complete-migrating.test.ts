// A job that finishes while its throttle's slot is being migrated (cluster resharding). BullMQ records
// the completion with one multi-key script (moveToFinished), which Redis refuses with TRYAGAIN for as long
// as the slot's keys are split between the two nodes. With ioredis's default 16 redirections the call
// gave up after about a second ("Too many Cluster redirections"); BullMQ took that for a Redis answer
// (no retry), emitted it as a worker error, and left the job active with its lock no longer renewed,
// until its stalled check ran the job a second time. Here the slot stays split for 4 s while the handler
// returns: the completion must wait the move out and land once the slot is whole on its new owner.
import { Redis } from 'ioredis';
import type { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice, type Sluice, type ThrottledJob } from '../../../src/index.js';
import { KeyBuilder } from '../../../src/redis/keys.js';
import { ThrottleKeys } from '../../../src/throttle/keys.js';
import { uniquePrefix } from '../../helpers/fixtures.js';
import { startCluster, type RedisCluster } from '../../helpers/redis-server.js';
import { ownerOf, slotOf } from '../../helpers/slot-migration.js';
import { until } from '../../helpers/throttle-procs.js';

const SPLIT_MS = 4_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let cluster: RedisCluster;
let sluice: Sluice;
const prefix = uniquePrefix('cm');
const k = new ThrottleKeys(new KeyBuilder(prefix), 'cmig');
/** Each attempt's handler gate: opened at the end, so an attempt that failed before it leaves no job held (close would wait for it). */
const gates: (() => void)[] = [];

beforeAll(async () => {
  cluster = await startCluster();
  sluice = createSluice({ redis: { cluster: cluster.nodes }, prefix });
}, 60_000);

afterAll(async () => {
  for (const open of gates) open();
  await sluice?.close();
  await cluster?.dispose();
});

describe('a job completing while its slot migrates', () => {
  it('is recorded completed once the slot is whole again: no worker error, not left active, run once', async () => {
    const ports = cluster.nodes.map((n) => n.port);
    const throttle = sluice.throttle('cmig', { ratePerSecond: 50, capacity: 10 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    gates.push(release);
    const runs: string[] = [];
    const worker = sluice.worker('cmig', async (job: ThrottledJob) => {
      runs.push(job.id);
      await gate;
      return 'ok';
    });
    await worker.waitUntilReady();
    // What BullMQ's Worker gave up on (sluice keeps its 'error' events quiet): the private field, read here only.
    const errors: string[] = [];
    (worker as unknown as { workers: Worker[] }).workers[0]!.on('error', (e: Error) => errors.push(e.message));

    const r = await throttle.submit('lane', { n: 1 });
    if (!r.admitted) throw new Error('not admitted');
    await until(() => runs.length === 1, 10_000, 'the start');

    // Split the slot: IMPORTING on the target, MIGRATING on the source, half of its keys moved.
    const slot = await slotOf(ports[0]!, k.tag);
    const from = await ownerOf(ports[0]!, slot);
    const to = ports.find((p) => p !== from)!;
    const src = new Redis(from, '127.0.0.1');
    const dst = new Redis(to, '127.0.0.1');
    try {
      const srcId = String(await src.cluster('MYID'));
      const dstId = String(await dst.cluster('MYID'));
      await dst.cluster('SETSLOT', slot, 'IMPORTING', srcId);
      await src.cluster('SETSLOT', slot, 'MIGRATING', dstId);
      const keys = (await src.cluster('GETKEYSINSLOT', slot, 1_000)) as string[];
      expect(keys.length).toBeGreaterThan(2);
      await src.migrate('127.0.0.1', to, '', 0, 5_000, 'KEYS', ...keys.slice(0, Math.floor(keys.length / 2)));

      // The handler returns now: BullMQ's completion meets TRYAGAIN for the whole split.
      release();
      // (Nothing of the throttle's is read meanwhile: those reads are multi-key scripts too, and wait.)
      await sleep(SPLIT_MS);

      for (;;) {
        const rest = (await src.cluster('GETKEYSINSLOT', slot, 100)) as string[];
        if (!rest.length) break;
        await src.migrate('127.0.0.1', to, '', 0, 5_000, 'KEYS', ...rest);
      }
      for (const p of [to, from, ...ports.filter((x) => x !== to && x !== from)]) {
        const c = new Redis(p, '127.0.0.1');
        await c.cluster('SETSLOT', slot, 'NODE', dstId);
        c.disconnect();
      }
    } finally {
      src.disconnect();
      dst.disconnect();
    }

    // Bounded: the completion lands a retry (100 ms) after the slot is whole.
    await until(async () => (await throttle.job(r.jobId))?.state === 'completed', 10_000, 'completion').catch(() => undefined);
    expect({ state: (await throttle.job(r.jobId))?.state, errors, runs }).toEqual({ state: 'completed', errors: [], runs: [r.jobId] });
    await worker.close();
  });
});
