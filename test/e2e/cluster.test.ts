// e2e on a 3-master Redis Cluster: `sluice serve` and `sluice worker` given a redis-cluster:// URL admit,
// run and report a job; the worker-only process serves its own /metrics (--metrics-port).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type RedisCluster } from '../helpers/redis-server.js';
import { postJson, startSluice, stopAll, tempDir, waitForJob, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

const RULES = `auth: none
queues:
  - name: orders
    rate_per_second: 10
    capacity: 5
    handler: { type: module, path: ./done.mjs }
`;

let cluster: RedisCluster;
let dir: TempDir;
let serve: SluiceProcess;
let worker: SluiceProcess;

beforeAll(async () => {
  cluster = await startCluster();
  dir = tempDir('cluster');
  dir.write('done.mjs', 'export default async (job) => ({ done: job.data });\n');
  const config = dir.write('rules.yaml', RULES);
  const redisUrl = `redis-cluster://${cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`;
  [serve, worker] = await Promise.all([
    startSluice('serve', { config, redisUrl }),
    startSluice('worker', { config, redisUrl, args: ['--metrics-port', '0'] }),
  ]);
});

afterAll(async () => {
  await stopAll(serve, worker);
  dir?.dispose();
  await cluster?.dispose();
});

describe('serve and worker on a Redis Cluster', () => {
  it('a submitted job runs and its status shows the result', async () => {
    const r = await postJson(`${serve.url}/v1/queues/orders/jobs`, { key: 'tenant-c', payload: { n: 1 } });
    expect(r.status).toBe(202);
    const job = await waitForJob(serve.url, r.headers.get('location')!);
    expect(job).toMatchObject({ state: 'completed', result: { done: { n: 1 } } });
  });

  it('the worker process serves /metrics on its own port', async () => {
    const line = await worker.waitForLog((l) => l.event === 'metrics_listening', 5_000, 'the metrics listener');
    const text = await (await fetch(String(line.url))).text();
    expect(text).toMatch(/sluice_jobs_total\{queue="orders",outcome="completed"\} [1-9]/);
    expect((await fetch(String(line.url).replace('/metrics', '/healthz'))).status).toBe(200);
  });
});
