// e2e: `sluice worker` follows the rules file: when a queue's handler (or settings) change, its
// workers restart on the new ones, so new jobs run the new handler — no process restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { postJson, startSluice, stopAll, tempDir, waitForJob, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

const rulesWith = (handler: string) => `auth: none
queues:
  - name: jobs
    rate_per_second: 50
    capacity: 10
    handler: { type: module, path: ./${handler} }
`;

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;
let worker: SluiceProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('worker-reload');
  dir.write('v1.mjs', "export default async () => 'v1';\n");
  dir.write('v2.mjs', "export default async () => 'v2';\n");
  const config = dir.write('rules.yaml', rulesWith('v1.mjs'));
  [serve, worker] = await Promise.all([startSluice('serve', { config, redisUrl: redis.url }), startSluice('worker', { config, redisUrl: redis.url })]);
});

afterAll(async () => {
  await stopAll(serve, worker);
  dir?.dispose();
  await redis?.dispose();
});

async function runOne(): Promise<unknown> {
  const res = await postJson(`${serve.url}/v1/queues/jobs/jobs`, { key: 'k', payload: {} });
  expect(res.status).toBe(202);
  const job = await waitForJob(serve.url, res.headers.get('location')!);
  return job.result;
}

describe('worker reload', () => {
  it('a changed handler applies to the next jobs', async () => {
    expect(await runOne()).toBe('v1');
    dir.replace('rules.yaml', rulesWith('v2.mjs'));
    await worker.waitForLog((l) => l.event === 'workers_restarted', 10_000, 'the workers to restart');
    expect(await runOne()).toBe('v2');
  });

  it('a handler that does not load: the workers go back to the previous one, and a later change restarts them', async () => {
    dir.write('v3.mjs', "export default async () => 'v3';\n");
    dir.replace('rules.yaml', rulesWith('missing.mjs'));
    await worker.waitForLog((l) => l.event === 'workers_restored', 20_000, 'the workers to go back to v2');
    expect(worker.logs.some((l) => l.event === 'workers_restart_failed')).toBe(true);
    expect(await runOne()).toBe('v2');
    // Before the fix, the failed restart left no workers and this change was ignored.
    const restarts = worker.logs.filter((l) => l.event === 'workers_restarted').length;
    dir.replace('rules.yaml', rulesWith('v3.mjs'));
    await worker.waitForLog(() => worker.logs.filter((l) => l.event === 'workers_restarted').length > restarts, 20_000, 'the workers to restart on v3');
    expect(await runOne()).toBe('v3');
  });
});
