// e2e: process lifecycle — SIGTERM to `sluice worker` while a job runs lets the job finish (completed)
// before the process exits 0, and leaves queued jobs for the next worker; `sluice dev` starts its own
// redis-server when none answers and stops it on exit.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { pollUntil, postJson, startSluice, stopAll, tempDir, waitForJob, type JobView, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

const HANDLER = `export default async function slow(job) {
  await new Promise((resolve) => setTimeout(resolve, job.data.ms));
  return { slept: job.data.ms, pid: process.pid };
}
`;
// One job per 5 s per key: the second job of a lane is still waiting when the first one ends.
const RULES = `auth: none
queues:
  - name: slow
    rate_per_second: 0.2
    capacity: 5
    handler: { type: module, path: ./slow.mjs }
`;

let redis: RedisServer;
let dir: TempDir;
let config: string;
let serve: SluiceProcess;
let worker: SluiceProcess;
let nextWorker: SluiceProcess | undefined;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('shutdown');
  dir.write('slow.mjs', HANDLER);
  config = dir.write('rules.yaml', RULES);
  [serve, worker] = await Promise.all([startSluice('serve', { config, redisUrl: redis.url }), startSluice('worker', { config, redisUrl: redis.url })]);
});

afterAll(async () => {
  await stopAll(serve, worker, nextWorker);
  await redis?.dispose();
  dir?.dispose();
});

async function status(location: string): Promise<JobView> {
  return (await (await fetch(serve.url + location)).json()) as JobView;
}

describe('sluice worker on SIGTERM', () => {
  it('finishes the running job, then exits 0; the queued job waits for the next worker', async () => {
    const first = await postJson(`${serve.url}/v1/queues/slow/jobs`, { key: 'k', payload: { ms: 1500 } });
    const second = await postJson(`${serve.url}/v1/queues/slow/jobs`, { key: 'k', payload: { ms: 10 } });
    expect([first.status, second.status]).toEqual([202, 202]);
    const running = first.headers.get('location')!;
    const waiting = second.headers.get('location')!;
    await pollUntil(() => status(running), (j) => j.state === 'active', 5000, 20, 'the first job to run');

    worker.child.kill('SIGTERM');
    const exit = await worker.exited;
    const exitedAt = Date.now();
    expect(exit).toEqual({ code: 0, signal: null });
    // The start-up warning about an unset SLUICE_HASH_SECRET depends on the environment, not on shutdown.
    const events = worker.logs.map((l) => l.event).filter((e) => e && e !== 'hash_secret_unset');
    expect(events).toEqual(['workers_ready', 'signal', 'shutting_down', 'stopped']);

    // The job that was running when the signal came completed, before the process ended.
    const done = await status(running);
    expect(done).toMatchObject({ state: 'completed', attemptsMade: 1, result: { slept: 1500, pid: worker.child.pid } });
    expect(Date.parse(done.finishedAt!)).toBeLessThanOrEqual(exitedAt);
    expect(Date.parse(done.finishedAt!) - Date.parse(done.startedAt!)).toBeGreaterThanOrEqual(1500);
    // The one still waiting for its slot was not lost, nor run by the worker that was stopping.
    expect((await status(waiting)).state).toBe('queued');

    nextWorker = await startSluice('worker', { config, redisUrl: redis.url });
    const later = await waitForJob(serve.url, waiting, 15_000);
    expect(later).toMatchObject({ state: 'completed', attemptsMade: 1, result: { slept: 10, pid: nextWorker.child.pid } });
    expect(await nextWorker.stop()).toEqual({ code: 0, signal: null });
  });
});

describe('sluice dev without a Redis', () => {
  const answers = (port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });

  it('starts a redis-server of its own, serves, and stops it on SIGTERM', async () => {
    const port = await freePort();
    expect(await answers(port)).toBe(false);
    const dev = await startSluice('dev', { config, redisUrl: `redis://127.0.0.1:${port}` });
    try {
      expect(dev.stderr()).toContain(`no Redis at redis://127.0.0.1:${port}: starting redis-server on port ${port}`);
      expect(await answers(port)).toBe(true);
      const ready = await fetch(`${dev.url}/readyz`);
      expect(ready.status).toBe(200);
      const res = await postJson(`${dev.url}/v1/queues/slow/jobs`, { key: 'dev', payload: { ms: 1 } });
      expect(res.status).toBe(202);
      expect((await waitForJob(dev.url, res.headers.get('location')!)).result).toMatchObject({ slept: 1 });
    } finally {
      expect(await dev.stop()).toEqual({ code: 0, signal: null });
    }
    await pollUntil(() => answers(port), (up) => !up, 5000, 50, 'the redis-server of sluice dev to stop');
  });
});
