// A queue of the rules file split into shards (`shards: 3`) behind the HTTP API, on a 3-master cluster:
// submits of keys in every shard answer 202 with ids naming their shard; status (long-poll), the event
// stream and cancel find each job in its shard; an id naming no shard is 404.
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

beforeAll(async () => {
  backend = await startBackend('cluster');
  sluice = backend.sluice();
  const rules = parseRules(RULES, { filename: 'rules.yaml' });
  const app = createApp({ sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }) });
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
});
