// One-key decisions on a real 3-master cluster go as one script call per master and tick
// (src/redis/node-batch.ts): the answers are exactly one node's, call for call; a decision whose slot
// moved after the client read its slot map is answered once, by the master that has it now; a client
// with an ioredis keyPrefix keeps sending each decision alone.
import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice, type PolicyInput, type Sluice } from '../../src/index.js';
import { limitAll } from '../../src/limiters/all-or-nothing.js';
import { startCluster, startRedis, type RedisCluster, type RedisServer } from '../helpers/redis-server.js';
import { moveSlot } from '../helpers/slot-migration.js';
import { uniquePrefix } from '../helpers/fixtures.js';

let cluster: RedisCluster;
let single: RedisServer;
const made: Sluice[] = [];
const sluiceOn = (redis: Parameters<typeof createSluice>[0]['redis'], prefix = uniquePrefix()) => {
  const s = createSluice({ redis, prefix });
  made.push(s);
  return s;
};

beforeAll(async () => {
  [cluster, single] = await Promise.all([startCluster(), startRedis()]);
});
afterAll(async () => {
  await Promise.all(made.map((s) => s.close().catch(() => undefined)));
  await Promise.all([cluster?.dispose(), single?.dispose()]);
});

/** Script calls (FCALL, EVALSHA, EVAL) each master has received so far. */
async function scriptCallsPerMaster(): Promise<number[]> {
  return Promise.all(
    cluster.nodes.map(async (n) => {
      const r = new Redis(n.port, n.host);
      try {
        const stats = await r.info('commandstats');
        let calls = 0;
        for (const m of stats.matchAll(/^cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/gm)) calls += Number(m[1]);
        return calls;
      } finally {
        r.disconnect();
      }
    }),
  );
}

const POLICIES: PolicyInput[] = [
  { algorithm: 'token-bucket', capacity: 5, refillPerSecond: 1, failMode: 'closed', timeoutMs: 5_000 },
  { algorithm: 'sliding-log', limit: 4, windowMs: 1_000, failMode: 'closed', timeoutMs: 5_000 },
  { algorithm: 'fixed-window', limit: 3, windowMs: 1_000, failMode: 'closed', timeoutMs: 5_000 },
];

/** Three ticks of 200 decisions over 50 keys at injected instants: each decision's answer as text. */
async function ticksOfDecisions(s: Sluice, policy: PolicyInput): Promise<string[]> {
  await s.ready();
  const limiter = s.limiter(policy);
  const out: string[] = [];
  for (let tick = 0; tick < 3; tick++) {
    const ds = await Promise.all(Array.from({ length: 200 }, (_, i) => limiter.limit(`k${i % 50}`, { nowMs: 1_700_000_000_000 + tick * 700 })));
    out.push(...ds.map((d) => `${d.allowed} ${d.remaining} ${d.retryAfterMs} ${d.resetAtMs} ${d.failure ?? ''}`));
  }
  return out;
}

describe('decisions on a cluster, batched per master', () => {
  it.each(POLICIES.map((p) => [p.algorithm, p] as const))('%s: the answers one node gives, in one script call per master and tick', async (_, policy) => {
    const prefix = uniquePrefix();
    const onOneNode = await ticksOfDecisions(sluiceOn(single.url, prefix), policy);
    const before = await scriptCallsPerMaster();
    const onCluster = await ticksOfDecisions(sluiceOn({ cluster: cluster.nodes }, prefix), policy);
    const calls = (await scriptCallsPerMaster()).map((c, i) => c - before[i]!);

    expect(onCluster).toEqual(onOneNode);
    expect(onOneNode.filter((a) => a.startsWith('false')).length).toBeGreaterThan(0); // some refused: the limits were met
    // 600 decisions over keys on all three masters: ~67 per master and tick, at most 32 per call, so
    // 3 calls per master and tick; the first tick's calls may meet NOSCRIPT and go again as EVAL.
    for (const c of calls) expect(c).toBeGreaterThan(0);
    expect(calls.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(3 * 3 * 3 + 3 * 3);
  });

  it('a decision whose slot moved after the client read its map is answered once, by its new master', async () => {
    const s = sluiceOn({ cluster: cluster.nodes });
    await s.ready();
    const limiter = s.limiter({ algorithm: 'token-bucket', capacity: 1_000, refillPerSecond: 0.001, failMode: 'closed', timeoutMs: 5_000 });
    const client = s.redis as Cluster;
    const nodeOf = (key: string) => client.slots[calculateSlot(limiter.keyOf(key))]![0]!;
    // Keys of one master, and one of them to move to another master.
    const all = Array.from({ length: 200 }, (_, i) => `m${i}`);
    const from = nodeOf(all[0]!);
    const keys = all.filter((k) => nodeOf(k) === from).slice(0, 12);
    const moved = keys[0]!;
    const slot = calculateSlot(limiter.keyOf(moved));
    expect(keys.slice(1).every((k) => calculateSlot(limiter.keyOf(k)) !== slot)).toBe(true);
    for (const d of await Promise.all(keys.map((k) => limiter.limit(k)))) expect(d.failure).toBeUndefined();

    const fromPort = Number(from.split(':')[1]);
    const toPort = cluster.nodes.find((n) => n.port !== fromPort)!.port;
    await moveSlot(slot, fromPort, toPort, cluster.nodes.map((n) => n.port));
    // The client has not learnt of the move: this tick's batch for `from` still carries `moved`.
    expect(nodeOf(moved)).toBe(from);

    const ds = await Promise.all(keys.map((k) => limiter.limit(k)));
    for (const d of ds) expect(d.failure).toBeUndefined();
    expect(ds.every((d) => d.allowed)).toBe(true);
    // Each key charged exactly twice: nothing lost, nothing run twice.
    for (const k of keys) expect((await limiter.peek(k)).remaining, k).toBe(998);
    const owner = new Redis(toPort, '127.0.0.1');
    try {
      expect(await owner.exists(limiter.keyOf(moved))).toBe(1);
    } finally {
      owner.disconnect();
    }
  });

  it('three limits all-or-nothing per request (one slot per client): the answers one node gives, batched per master', async () => {
    const prefix = uniquePrefix();
    const requests = async (s: Sluice) => {
      await s.ready();
      const tb = s.limiter({ name: 'nb-tb', algorithm: 'token-bucket', capacity: 4, refillPerSecond: 1, failMode: 'closed', timeoutMs: 5_000 });
      const sc = s.limiter({ name: 'nb-sc', algorithm: 'sliding-counter', limit: 3, windowMs: 1_000, failMode: 'closed', timeoutMs: 5_000 });
      const fw = s.limiter({ name: 'nb-fw', algorithm: 'fixed-window', limit: 5, windowMs: 1_000, failMode: 'closed', timeoutMs: 5_000 });
      const out: string[] = [];
      for (let tick = 0; tick < 3; tick++) {
        const options = { nowMs: 1_700_000_000_000 + tick * 400 };
        const rs = await Promise.all(
          Array.from({ length: 150 }, (_, i) => {
            const client = `c${i % 40}`;
            const o = { ...options, slot: client };
            return limitAll([
              { limiter: tb, key: client, options: o },
              { limiter: sc, key: `orders|${client}`, options: o },
              { limiter: fw, key: 'orders', options: o },
            ]);
          }),
        );
        out.push(...rs.map((r) => `${r.allowed} ${r.decisions.map((d) => `${d.allowed}/${d.remaining}/${d.retryAfterMs}/${d.failure ?? ''}`).join(' ')}`));
      }
      return out;
    };
    const onOneNode = await requests(sluiceOn(single.url, prefix));
    const before = await scriptCallsPerMaster();
    const onCluster = await requests(sluiceOn({ cluster: cluster.nodes }, prefix));
    const calls = (await scriptCallsPerMaster()).map((c, i) => c - before[i]!);
    expect(onCluster).toEqual(onOneNode);
    expect(onOneNode.filter((a) => a.startsWith('false')).length).toBeGreaterThan(0);
    expect(onOneNode.filter((a) => a.startsWith('true')).length).toBeGreaterThan(0);
    // 450 requests, ~50 per master and tick: 2 calls per master and tick, and the first tick's EVAL after NOSCRIPT.
    for (const c of calls) expect(c).toBeGreaterThan(0);
    expect(calls.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(3 * 3 * 2 + 3 * 2);
  });

  it('a request whose slot moved after the client read its map is decided once, all-or-nothing, by its new master', async () => {
    const s = sluiceOn({ cluster: cluster.nodes });
    await s.ready();
    const a = s.limiter({ name: 'mv-a', algorithm: 'token-bucket', capacity: 1_000, refillPerSecond: 0.001, failMode: 'closed', timeoutMs: 5_000 });
    const b = s.limiter({ name: 'mv-b', algorithm: 'fixed-window', limit: 1_000, windowMs: 600_000, failMode: 'closed', timeoutMs: 5_000 });
    const client = s.redis as Cluster;
    const request = (c: string) => limitAll([
      { limiter: a, key: c, options: { slot: c } },
      { limiter: b, key: c, options: { slot: c } },
    ]);
    const nodeOf = (c: string) => client.slots[calculateSlot(a.keyOf(c, { slot: c }))]![0]!;
    const all = Array.from({ length: 200 }, (_, i) => `r${i}`);
    const from = nodeOf(all[0]!);
    const clients = all.filter((c) => nodeOf(c) === from).slice(0, 10);
    const moved = clients[0]!;
    const slot = calculateSlot(a.keyOf(moved, { slot: moved }));
    for (const r of await Promise.all(clients.map(request))) expect(r.allowed).toBe(true);
    const fromPort = Number(from.split(':')[1]);
    const toPort = cluster.nodes.find((n) => n.port !== fromPort)!.port;
    await moveSlot(slot, fromPort, toPort, cluster.nodes.map((n) => n.port));
    expect(nodeOf(moved)).toBe(from);
    const rs = await Promise.all(clients.map(request));
    for (const r of rs) {
      expect(r.allowed).toBe(true);
      for (const d of r.decisions) expect(d.failure).toBeUndefined();
    }
    for (const c of clients) {
      expect((await a.peek(c, { slot: c })).remaining, c).toBe(998);
      expect((await b.peek(c, { slot: c })).remaining, c).toBe(998);
    }
  });

  it('a cluster client with an ioredis keyPrefix sends each decision alone (its keys would miss the prefix in a batch)', async () => {
    const prefix = uniquePrefix();
    const policy = POLICIES[0]!;
    const onOneNode = await ticksOfDecisions(sluiceOn(single.url, prefix), policy);
    const own = new Cluster(cluster.nodes, { keyPrefix: 'kp:' });
    try {
      const before = await scriptCallsPerMaster();
      const onCluster = await ticksOfDecisions(sluiceOn(own, prefix), policy);
      const calls = (await scriptCallsPerMaster()).map((c, i) => c - before[i]!);
      expect(onCluster).toEqual(onOneNode);
      expect(calls.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(600);
    } finally {
      own.disconnect();
    }
  });
});
