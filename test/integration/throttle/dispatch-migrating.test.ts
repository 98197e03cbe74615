// The dispatcher during a slot migration (cluster resharding). throttle-dispatch.lua builds lane keys
// from a prefix instead of receiving them in KEYS, so Redis cannot redirect the call to where they are:
// with the slot half moved, the script would run on one node while some lane keys are on the other.
// Without its guard it then dropped a lane from the schedule on the source ("non local key" error
// part-way, after the ZREM) and re-created a lane hash on the target (the next MIGRATE failed BUSYKEY,
// a lane with queued jobs left the busy set). With the guard it dispatches nothing and changes nothing
// until the slot is stable again.
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice, type Sluice } from '../../../src/index.js';
import { KeyBuilder } from '../../../src/redis/keys.js';
import { argvOf, keysOf } from '../../../src/redis/script-table.js';
import { loadScripts } from '../../../src/redis/script-forms.js';
import { ThrottleKeys } from '../../../src/throttle/keys.js';
import { dispatchKeys } from '../../../src/throttle/lane-scripts.js';
import { startCluster, type RedisCluster } from '../../helpers/redis-server.js';
import { ownerOf, slotOf } from '../../helpers/slot-migration.js';
import { uniquePrefix } from '../../helpers/fixtures.js';

let cluster: RedisCluster;
let sluice: Sluice;
let raw: Cluster;
const prefix = uniquePrefix('dm');
const k = new ThrottleKeys(new KeyBuilder(prefix), 'mig');

beforeAll(async () => {
  cluster = await startCluster();
  raw = new Cluster(cluster.nodes);
  sluice = createSluice({ redis: { cluster: cluster.nodes }, prefix });
}, 60_000);

afterAll(async () => {
  await sluice?.close();
  raw?.disconnect();
  await cluster?.dispose();
});

const lua = () => loadScripts().get('throttle-dispatch')!.lua;
const KEYS = () => keysOf('throttle-dispatch', dispatchKeys(k));
const ARGV = (maxJobs = 100) =>
  argvOf('throttle-dispatch', { now: '', horizonUs: 50_000, deliveryUs: 5_000, maxJobs, globalIntervalUs: 0, marginPpm: 10_000, lanePrefix: k.lanePrefix, jobPrefix: k.jobPrefix, missingRetryUs: 1_000, quotas: '', maxOutstanding: 0, forgottenUs: 0 });

/** The throttle's schedule and lanes, read through the cluster client (it follows ASK to wherever a key is). */
async function schedule() {
  const z = (key: string) => raw.zrange(key, '0', '-1', 'WITHSCORES');
  const lanes: Record<string, unknown> = {};
  for (const lane of ['a', 'b', 'c']) lanes[lane] = { hash: await raw.hgetall(k.lane(lane)), queue: await z(k.laneQueue(lane)) };
  return { waiting: await z(k.waiting), ready: await z(k.ready), busy: await z(k.busy), dispatched: await z(k.dispatched), global: await raw.hgetall(k.global), lanes };
}

/** Moves the slot's remaining keys from `src` to `dst` (MIGRATE without REPLACE: BUSYKEY fails it) and gives every node the new owner. */
async function finishMove(src: Redis, dst: Redis, slot: number, from: number, to: number, ports: number[]): Promise<void> {
  for (;;) {
    const rest = (await src.cluster('GETKEYSINSLOT', slot, 100)) as string[];
    if (!rest.length) break;
    await src.migrate('127.0.0.1', to, '', 0, 5_000, 'KEYS', ...rest);
  }
  const dstId = String(await dst.cluster('MYID'));
  for (const p of [to, from, ...ports.filter((x) => x !== to && x !== from)]) {
    const c = new Redis(p, '127.0.0.1');
    await c.cluster('SETSLOT', slot, 'NODE', dstId);
    c.disconnect();
  }
}

describe('throttle-dispatch.lua while its slot migrates', () => {
  it('dispatches nothing and changes nothing on the source or the target, and the move meets no BUSYKEY', async () => {
    const ports = cluster.nodes.map((n) => n.port);
    // 3 lanes x 3 jobs; one dispatch round of one job leaves every key the script declares in place
    // (waiting: lane a, ready: lanes b and c, global, busy, dispatched, and BullMQ's meta, delayed set,
    // wait list, marker and event stream: the job went to the wait list), so the script runs past
    // Redis's own multi-key check, which refuses it (TRYAGAIN) while any declared key is missing.
    const throttle = sluice.throttle('mig', { ratePerSecond: 1, capacity: 100 });
    for (const lane of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) expect((await throttle.submit(lane, { i })).admitted).toBe(true);
    const slot = await slotOf(ports[0]!, k.tag);
    const from = await ownerOf(ports[0]!, slot);
    const to = ports.find((p) => p !== from)!;
    const src = new Redis(from, '127.0.0.1');
    const dst = new Redis(to, '127.0.0.1');
    try {
      const first = (await src.eval(lua(), KEYS().length, ...KEYS(), ...ARGV(1))) as number[];
      expect(first[0]).toBe(1);
      expect(await Promise.all(KEYS().map((key) => src.exists(key)))).toEqual(KEYS().map(() => 1));
      const before = await schedule();

      await dst.cluster('SETSLOT', slot, 'IMPORTING', String(await src.cluster('MYID')));
      await src.cluster('SETSLOT', slot, 'MIGRATING', String(await dst.cluster('MYID')));
      // On the source, before any key moved: lane b's next job would create its outgoing set (a new
      // key, which a migrating slot refuses) after taking the job out of the lane's queue.
      const onSource = (await src.eval(lua(), KEYS().length, ...KEYS(), ...ARGV())) as number[];
      expect(onSource[0]).toBe(0);
      expect(await schedule()).toEqual(before);

      // On the target (ASKING, as a client redirected there): every declared key and lane c's queue
      // moved, lane b's hash and queue still on the source (it would look empty there: idled, its hash
      // re-created on the target).
      await src.migrate('127.0.0.1', to, '', 0, 5_000, 'KEYS', ...KEYS(), k.laneQueue('c'));
      await dst.call('ASKING');
      const onTarget = (await dst.eval(lua(), KEYS().length, ...KEYS(), ...ARGV())) as number[];
      expect(onTarget[0]).toBe(0);
      expect(await schedule()).toEqual(before);

      // The rest moves without REPLACE: nothing was created on the target meanwhile.
      await finishMove(src, dst, slot, from, to, ports);
      expect(await schedule()).toEqual(before);
      // Stable again: the same call dispatches lanes b and c on the new owner.
      const after = (await dst.eval(lua(), KEYS().length, ...KEYS(), ...ARGV())) as number[];
      expect(after[0]).toBe(2);
    } finally {
      src.disconnect();
      dst.disconnect();
    }
  });

  it('a spend quota counter is left alone while the slot migrates: a reconciliation still runs, and touches no counter', async () => {
    const ports = cluster.nodes.map((n) => n.port);
    const kq = new ThrottleKeys(new KeyBuilder(prefix), 'migq');
    const throttle = sluice.throttle('migq', { ratePerSecond: 1, capacity: 100, quotas: [{ scope: 'key', period: 'day', unit: 'cost', limit: 1_000, whenExhausted: 'defer' }] });
    // As above: every key the reconcile script declares exists (lane a's hash and outgoing set, the
    // global hash, waiting and ready), so it runs past Redis's own multi-key check.
    for (const lane of ['a', 'b', 'c']) for (let i = 0; i < 2; i++) expect((await throttle.submit(lane, { i })).admitted).toBe(true);
    const [job] = (await throttle.gateLanes.dispatch(1)).jobs;
    expect(job!.laneId).toBe('a');
    const slot = await slotOf(ports[0]!, kq.tag);
    const from = await ownerOf(ports[0]!, slot);
    const to = ports.find((p) => p !== from)!;
    const src = new Redis(from, '127.0.0.1');
    const dst = new Redis(to, '127.0.0.1');
    try {
      const counters = await src.keys(`${kq.lane('a')}:qu:*`);
      expect(counters).toHaveLength(1);
      expect(await src.get(counters[0]!)).toBe('1');
      await dst.cluster('SETSLOT', slot, 'IMPORTING', String(await src.cluster('MYID')));
      await src.cluster('SETSLOT', slot, 'MIGRATING', String(await dst.cluster('MYID')));
      // The counter moved first; the lane and the rest are still on the source.
      await src.migrate('127.0.0.1', to, '', 0, 5_000, 'KEYS', counters[0]!);
      const reconcile = loadScripts().get('throttle-reconcile')!.lua;
      const keys = keysOf('throttle-reconcile', { lane: kq.lane('a'), laneOutgoing: kq.laneOutgoing('a'), global: kq.global, waiting: kq.waiting, ready: kq.ready });
      const t = throttle.timing;
      const argv = argvOf('throttle-reconcile', {
        now: '',
        diff: 3,
        laneIntervalUs: t.laneIntervalUs,
        globalIntervalUs: 0,
        marginPpm: t.marginPpm,
        horizonUs: t.leadUs,
        laneId: 'a',
        quotas: t.quotas.arg(''),
        slotUs: job!.startUs,
      });
      expect(await Promise.all(keys.map((key) => src.exists(key)))).toEqual([1, 1, 1, 1, 1]);
      // Without the guard Redis stops the script at the counter ("non local key"): the lane meter would
      // not be reconciled either. With it, the meter is, and no counter appears on the source.
      const [laneUs] = (await src.eval(reconcile, keys.length, ...keys, ...argv)) as number[];
      expect(laneUs).toBeGreaterThan(job!.startUs);
      // (Asked by slot: a plain EXISTS of a key this node no longer has answers ASK.)
      expect(await src.cluster('GETKEYSINSLOT', slot, 1_000)).not.toContain(counters[0]!);
      await finishMove(src, dst, slot, from, to, ports);
      // The window still counts the one start: the reconciliation during the move was skipped.
      expect((await throttle.quotaUse('a'))[0]!.used).toBe(1);
    } finally {
      src.disconnect();
      dst.disconnect();
    }
  });
});
