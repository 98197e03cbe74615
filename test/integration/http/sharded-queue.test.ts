// A queue of the rules file split into shards (`shards: 3`) behind the HTTP API, on a 3-master cluster:
// submits of keys in every shard answer 202 with ids naming their shard; status (long-poll), the event
// stream and cancel find each job in its shard; an id naming no shard is 404; the admin overview shows
// how the global cap is divided among the shards, by their demand.
import { createServer, type Server } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics, parseRules, type Sluice, type ThrottledJob } from '../../../src/index.js';
import { createApp } from '../../../src/express.js';
import { shardOfLane } from '../../../src/throttle/shards.js';
import { startBackend, type Backend } from '../../helpers/fixtures.js';

const RULES = `queues:
  - name: work
    rate_per_second: 50
    capacity: 10
    global_rate_per_second: 30
    shards: 3
    key: body
    handler: { type: module, path: ./unused.mjs }
  - name: idle
    rate_per_second: 0.01
    capacity: 5
    shards: 3
    key: body
    handler: { type: module, path: ./unused.mjs }
`;

let backend: Backend;
let sluice: Sluice;
let server: Server;
let base: string;
const TOKEN = 'sharded-queue-admin-token-0001';

beforeAll(async () => {
  backend = await startBackend('cluster');
  sluice = backend.sluice();
  const rules = parseRules(RULES, { filename: 'rules.yaml' });
  const app = createApp({ sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }), adminToken: TOKEN });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const worker = sluice.worker('work', (job: ThrottledJob<{ n: number }>) => ({ doubled: job.data.n * 2, lane: job.lane }), { config: rules.queue('work')!.throttle });
  await worker.waitUntilReady();
});
afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await backend?.dispose();
});

/** A key of each shard. */
const keys = [0, 1, 2].map((s) => {
  let i = 0;
  while (shardOfLane(`key${i}`, 3) !== s) i++;
  return `key${i}`;
});

async function submit(queue: string, key: string, payload: unknown): Promise<string> {
  const res = await fetch(`${base}/v1/queues/${queue}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key, payload }) });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

describe('a sharded queue over HTTP', () => {
  it('jobs of every shard run; status, long-poll and the event stream find them', async () => {
    const ids = await Promise.all(keys.map((key, n) => submit('work', key, { n })));
    ids.forEach((id, s) => expect(id.endsWith(`.s${s}`)).toBe(true));
    for (const [n, id] of ids.entries()) {
      const done = await fetch(`${base}/v1/queues/work/jobs/${id}?wait=20`);
      expect(await done.json()).toMatchObject({ id, state: 'completed', result: { doubled: n * 2, lane: keys[n] } });
      const events = await (await fetch(`${base}/v1/queues/work/jobs/${id}/events`)).text();
      // A finished job's stream is its state, then the end.
      expect(events).toContain('"state":"completed"');
    }
    expect((await fetch(`${base}/v1/queues/work/jobs/${ids[0]!.replace(/\.s\d$/, '')}`)).status).toBe(404);
  });

  it('cancel frees the unit in the lane of its shard', async () => {
    for (const key of keys) {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(await submit('idle', key, i));
      const full = await fetch(`${base}/v1/queues/idle/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key, payload: 'x' }) });
      expect(full.status).toBe(429);
      expect((await fetch(`${base}/v1/queues/idle/jobs/${ids[2]}`, { method: 'DELETE' })).status).toBe(200);
      expect((await fetch(`${base}/v1/queues/idle/jobs/${ids[2]}`)).status).toBe(404);
      await submit('idle', key, 'again');
    }
  });

  it("the admin overview shows each shard's demand and share of the global cap", async () => {
    const overview = async () => {
      const res = await fetch(`${base}/v1/admin/queues`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { queues: { name: string; live: { globalCap?: { shards?: { shard: number; busyLanes: number; demand: number; share: number }[] } } }[] };
      return body.queues.find((q) => q.name === 'work')!.live.globalCap!.shards!;
    };
    // Uncapped queues show none.
    const all = (await (await fetch(`${base}/v1/admin/queues`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { queues: { name: string; live: { globalCap?: unknown } }[] };
    expect(all.queues.find((q) => q.name === 'idle')!.live.globalCap).toBeUndefined();
    // Nothing busy: every share sums to at most the cap, each at least 1.
    const idle = await overview();
    expect(idle.map((s) => s.shard)).toEqual([0, 1, 2]);
    expect(idle.reduce((a, s) => a + s.share, 0)).toBeLessThanOrEqual(30);
    // Shard 1 alone busy (5 lanes of 10 jobs at their own 50/s, far above the cap of 30): the allocator
    // (the worker's process holds its lease) gives it the cap less one start per second for each other shard.
    const busyKeys: string[] = [];
    for (let i = 0; busyKeys.length < 5; i++) if (shardOfLane(`busy${i}`, 3) === 1) busyKeys.push(`busy${i}`);
    for (const key of busyKeys) for (let i = 0; i < 10; i++) await submit('work', key, { n: i });
    let shards = await overview();
    for (let t = 0; t < 100 && !(shards[1]!.busyLanes > 0 && shards[1]!.share === 28); t++) {
      await new Promise((r) => setTimeout(r, 20));
      shards = await overview();
    }
    expect(shards[1]!.share).toBe(28);
    expect(shards[1]!.demand).toBe(50 * shards[1]!.busyLanes);
    expect(shards.map((s) => [s.shard, s.busyLanes > 0, s.share])).toEqual([
      [0, false, 1],
      [1, true, 28],
      [2, false, 1],
    ]);
  });
});
