// A real 3-master Redis Cluster: one master is SIGKILLed under decision load, the cluster goes down,
// the master comes back (empty) and the cluster recovers. No decision answered by its fail mode may be
// charged afterwards (issue 8, defect 10: ioredis's retries re-sent scripts after their deadline).
// And `sluice.ready()` waits for the slots, so no early decision is spent waiting for them (defect 11).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice, Metrics, type Sluice } from '../../../src/index.js';
import { startCluster, type RedisCluster } from '../../helpers/redis-server.js';
import { uniquePrefix } from '../../helpers/fixtures.js';

const run = promisify(execFile);
let cluster: RedisCluster;
const made: Sluice[] = [];
const sluiceOn = (metrics?: Metrics) => {
  const s = createSluice({ redis: { cluster: cluster.nodes }, prefix: uniquePrefix(), ...(metrics ? { observer: metrics } : {}) });
  made.push(s);
  return s;
};

beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await Promise.all(made.map((s) => s.close().catch(() => undefined)));
  await cluster?.dispose();
});

async function clusterState(port: number): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info'], { timeout: 2_000 }).catch(() => ({ stdout: '' }));
  return /cluster_state:(\w+)/.exec(stdout)?.[1] ?? 'unreachable';
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('sluice.ready() on a cluster', () => {
  it('resolves once the slots are known; decisions after it all reach Redis; earlier ones are counted', async () => {
    const metrics = new Metrics();
    const early = sluiceOn(metrics);
    // A deadline a loaded test machine keeps: the point is that no decision waits for the slots.
    const policy = { algorithm: 'fixed-window', limit: 1_000, windowMs: 60_000, failMode: 'open', timeoutMs: 3_000 } as const;
    // Asked for at once, before the client knows the cluster: counted as such, whatever they answer.
    await Promise.all(Array.from({ length: 7 }, (_, i) => early.limiter(policy).limit(`e${i}`)));
    expect(await metrics.text()).toMatch(/^sluice_decisions_before_ready_total\{algorithm="fixed-window"\} 7$/m);

    const waited = new Metrics();
    const s = sluiceOn(waited);
    await s.ready();
    expect(s.redis.status).toBe('ready');
    const decisions = await Promise.all(Array.from({ length: 100 }, (_, i) => s.limiter(policy).limit(`k${i}`)));
    expect(decisions.filter((d) => d.failure !== undefined)).toHaveLength(0);
    expect(await waited.text()).not.toMatch(/^sluice_decisions_before_ready_total\{/m);
  });
});

describe('a master killed under decision load', () => {
  it('charges no decision that its fail mode answered: each decision is sent at most once, and charges are the allowed answers plus the counted late runs', async () => {
    const metrics = new Metrics();
    const s = sluiceOn(metrics);
    await s.ready();
    const capacity = 1_000_000;
    const limiter = s.limiter({ algorithm: 'token-bucket', capacity, refillPerSecond: 0.001, failMode: 'open', timeoutMs: 200 });
    // Keys served by the two masters that stay (cluster.servers[0] is killed): their decisions meet
    // the outage as CLUSTERDOWN, which a client retry would re-send; nothing else sends to them.
    const killed = cluster.servers[0]!;
    const probe = new Redis(cluster.nodes[1]!.port, '127.0.0.1');
    const slots = (await probe.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const portOf = async (key: string) => {
      const slot = Number(await probe.call('CLUSTER', 'KEYSLOT', limiter.keyOf(key)));
      return slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
    };
    const candidates = Array.from({ length: 40 }, (_, i) => `key${i}`);
    const ports = await Promise.all(candidates.map(portOf));
    probe.disconnect();
    const keys = candidates.filter((_, i) => ports[i] !== killed.port).slice(0, 10);
    expect(keys).toHaveLength(10);
    for (const key of keys) expect((await limiter.peek(key)).failure).toBeUndefined(); // scripts loaded

    // Every script call (FCALL, or EVALSHA before the library is in) a live master received (run, or
    // refused with CLUSTERDOWN) against the decisions sent to its keys: a script re-sent by a client
    // retry shows up as a surplus here.
    const liveNodes = cluster.nodes.filter((n) => n.port !== killed.port);
    const evalshaSends = async () => {
      let total = 0;
      for (const n of liveNodes) {
        const { stdout } = await run('redis-cli', ['-p', String(n.port), 'info', 'commandstats'], { timeout: 2_000 });
        for (const m of stdout.matchAll(/cmdstat_(?:fcall|evalsha):calls=(\d+),.*rejected_calls=(\d+)/g)) total += Number(m[1]) + Number(m[2]);
      }
      return total;
    };
    const sendsBefore = await evalshaSends();
    const issued = new Map(keys.map((k) => [k, 0]));
    const allowed = new Map(keys.map((k) => [k, 0]));
    let failed = 0;
    let stop = false;
    const load = keys.map(async (key) => {
      while (!stop) {
        issued.set(key, issued.get(key)! + 1);
        const d = await limiter.limit(key);
        if (d.failure) failed++;
        else if (d.allowed) allowed.set(key, allowed.get(key)! + 1);
        await sleep(40);
      }
    });
    await sleep(500);
    await killed.kill();
    // The other masters declare it failed after the node timeout (3 s): the cluster is down.
    await until(async () => (await clusterState(cluster.nodes[1]!.port)) === 'fail', 15_000, 'cluster_state:fail');
    await sleep(300);
    await killed.start();
    await until(async () => (await Promise.all(cluster.nodes.map((n) => clusterState(n.port)))).every((st) => st === 'ok'), 20_000, 'cluster_state:ok');
    await sleep(1_000);
    stop = true;
    await Promise.all(load);
    await sleep(500); // anything re-sent late would have landed by now

    const sends = (await evalshaSends()) - sendsBefore;

    expect(failed).toBeGreaterThan(0); // the outage was seen and answered by the fail mode
    const liveIssued = keys.reduce((n, k) => n + issued.get(k)!, 0);
    expect(sends).toBeGreaterThan(0); // the count sees the decisions' script calls
    expect(sends).toBeLessThanOrEqual(liveIssued); // each decision sent at most once
    // Exact charges: what was allowed, plus the runs that came back after their deadline (Redis slow,
    // not down, on a loaded machine), each seen and counted; nothing else.
    const text = await metrics.text();
    const lateCharged = Number(/^sluice_late_decisions_total\{algorithm="token-bucket",charged="true"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    let charged = 0;
    let allowedLive = 0;
    for (const key of keys) {
      const state = await limiter.peek(key);
      expect(state.failure).toBeUndefined();
      charged += capacity - state.remaining;
      allowedLive += allowed.get(key)!;
    }
    expect(charged).toBeGreaterThanOrEqual(allowedLive);
    expect(charged).toBeLessThanOrEqual(allowedLive + lateCharged);
  });
});
