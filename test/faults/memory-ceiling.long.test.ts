// Fault family "memory ceiling": Redis at its maxmemory with `noeviction` refuses writes (OOM command
// not allowed). Submits must answer 503 with the reason, decisions follow their fail mode, nothing
// crashes, and all resumes once memory is freed. With an evicting policy, serve and worker warn at
// start (and start anyway when the policy cannot be read).
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil, postJson, startSluice, stopAll, tempDir, waitForJob, type SluiceProcess, type TempDir } from '../helpers/e2e.js';
import { reportFigure } from '../helpers/figures.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { fillToCeiling } from '../helpers/memory-ceiling.js';

const RULES = `auth: none
domains:
  - domain: api
    descriptors:
      - key: open
        name: open-rule
        policy: { algorithm: fixed-window, limit: 100000, window: 1h }
        fail_mode: open
      - key: log
        name: log-rule
        policy: { algorithm: sliding-log, limit: 100000, window: 1h }
        fail_mode: open
      - key: closed
        name: closed-rule
        policy: { algorithm: fixed-window, limit: 100000, window: 1h }
        fail_mode: closed
queues:
  - name: jobs
    rate_per_second: 50
    capacity: 10
    handler: { type: module, path: ./noop.mjs }
`;

let dir: TempDir;
let config: string;
beforeAll(() => {
  dir = tempDir('memory');
  dir.write('noop.mjs', 'export default async () => "done";\n');
  config = dir.write('rules.yaml', RULES);
});
afterAll(() => dir?.dispose());

interface Status {
  allowed: boolean;
  failure?: string;
}

async function decide(url: string, key: 'open' | 'closed' | 'log', value: string): Promise<{ status: number; first: Status }> {
  const res = await postJson(`${url}/v1/decisions`, { domain: 'api', descriptors: [{ key, value }] });
  const body = (await res.json()) as { statuses: Status[] };
  return { status: res.status, first: body.statuses[0]! };
}

describe('memory ceiling (maxmemory 16mb, noeviction)', () => {
  let redis: RedisServer;
  let raw: Redis;
  let serve: SluiceProcess;
  let worker: SluiceProcess;
  beforeAll(async () => {
    redis = await startRedis(['--maxmemory', '16mb', '--maxmemory-policy', 'noeviction']);
    raw = new Redis(redis.port, '127.0.0.1');
    [serve, worker] = await Promise.all([startSluice('serve', { config, redisUrl: redis.url, readyTimeoutMs: 90_000 }), startSluice('worker', { config, redisUrl: redis.url, readyTimeoutMs: 90_000 })]);
  });
  afterAll(async () => {
    await stopAll(serve, worker);
    raw?.disconnect();
    await redis?.dispose();
  });

  it('at the ceiling: submits 503 with the OOM reason, decisions by fail mode, no crash; resumes when memory frees', async () => {
    expect((await postJson(`${serve.url}/v1/queues/jobs/jobs`, { key: 'before', payload: {} })).status).toBe(202);
    const keys = await fillToCeiling(raw);

    const submits = [];
    for (let i = 0; i < 20; i++) submits.push(await postJson(`${serve.url}/v1/queues/jobs/jobs`, { key: `k${i}`, payload: { i } }));
    const bodies = (await Promise.all(submits.map((r) => r.json()))) as { code: string; message: string }[];
    expect(submits.map((r) => r.status)).toEqual(Array(20).fill(503));
    for (const b of bodies) {
      expect(b.code).toBe('SLUICE_ERR_REDIS_UNAVAILABLE');
      expect(b.message).toMatch(/OOM command not allowed/);
    }
    // New keys need memory: fail-open allows and says so, fail-closed refuses and says so.
    const open = await decide(serve.url, 'open', 'new-open');
    const closed = await decide(serve.url, 'closed', 'new-closed');
    // The sliding log goes on deciding at the ceiling: its first write is the trim (ZREMRANGEBYSCORE,
    // which Redis allows under OOM since it frees memory), and once a script has written, Redis lets
    // the rest of it run (a script is never stopped half-way), ZADD included. So a sliding-log limiter
    // keeps counting, and grows past maxmemory by its entries (docs/operations.md#memory).
    const log = await decide(serve.url, 'log', 'new-log');
    expect(log).toEqual({ status: 200, first: expect.objectContaining({ allowed: true }) });
    expect(open).toEqual({ status: 200, first: expect.objectContaining({ allowed: true, failure: 'fail-open' }) });
    expect(closed).toEqual({ status: 200, first: expect.objectContaining({ allowed: false, failure: 'fail-closed' }) });
    expect((await fetch(`${serve.url}/healthz`)).status).toBe(200);
    expect(serve.child.exitCode).toBeNull();
    expect(worker.child.exitCode).toBeNull();
    const info = await raw.info('memory');

    // Free the memory (and give the limit back): everything resumes without a restart.
    await raw.config('SET', 'maxmemory', '16mb');
    const freedAt = performance.now();
    const pipe = raw.pipeline();
    for (let i = 0; i < keys; i++) pipe.del(`filler:${i}`);
    await pipe.exec();
    const after = await pollUntil(() => decide(serve.url, 'closed', 'new-closed'), (d) => !d.first.failure, 10_000, 50, 'a real decision');
    expect(after.first.allowed).toBe(true);
    const res = await pollUntil(() => postJson(`${serve.url}/v1/queues/jobs/jobs`, { key: 'after', payload: {} }), (r) => r.status === 202, 10_000, 50, 'an admitted submit');
    const recoverMs = performance.now() - freedAt;
    const job = await waitForJob(serve.url, res.headers.get('location')!, 15_000);
    expect(job.state).toBe('completed');
    expect(serve.child.exitCode).toBeNull();
    expect(worker.child.exitCode).toBeNull();
    // noeviction is the default and what sluice needs: no warning, no note.
    expect(serve.logs.some((l) => l.event === 'redis_eviction_policy')).toBe(false);

    reportFigure('memory-ceiling', {
      maxmemory: '16mb',
      policy: 'noeviction',
      usedMemoryAtCeiling: Number(/used_memory:(\d+)/.exec(info)?.[1]),
      submitsAtCeiling: { total: 20, answered503: submits.filter((r) => r.status === 503).length },
      decisionsAtCeiling: { fixedWindowOpen: open.first.failure ?? 'real', fixedWindowClosed: closed.first.failure ?? 'real', slidingLogOpen: log.first.failure ?? 'real' },
      recoverAfterFreeMs: Math.round(recoverMs),
      errorLogLines: serve.logs.filter((l) => (l.level ?? 0) >= 50).length,
    });
  });
});

describe('evicting policies: warned at start', { timeout: 180_000 }, () => {
  it('serve and worker warn when Redis may evict, and start anyway when INFO and CONFIG are disabled', async () => {
    const lru = await startRedis(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru']);
    // INFO and CONFIG denied by ACL (NOPERM), as a managed Redis may: ioredis's ready check accepts
    // NOPERM; the policy check gives up quietly.
    const locked = await startRedis(['--maxmemory-policy', 'volatile-lru', '--user', 'default', 'on', 'nopass', '~*', '&*', '+@all', '-info', '-config']);
    const procs: SluiceProcess[] = [];
    try {
      procs.push(
        ...(await Promise.all([
          startSluice('serve', { config, redisUrl: lru.url, env: { LOG_LEVEL: 'debug' }, readyTimeoutMs: 90_000 }),
          startSluice('worker', { config, redisUrl: lru.url, env: { LOG_LEVEL: 'debug' }, readyTimeoutMs: 90_000 }),
          startSluice('serve', { config, redisUrl: locked.url, env: { LOG_LEVEL: 'debug' }, readyTimeoutMs: 90_000 }),
        ])),
      );
      const [lruServe, lruWorker, lockedServe] = procs as [SluiceProcess, SluiceProcess, SluiceProcess];
      for (const p of [lruServe, lruWorker]) {
        const line = await p.waitForLog((l) => l.event === 'redis_eviction_policy', 10_000, 'the eviction warning');
        expect(line).toMatchObject({ level: 40, policy: 'allkeys-lru', maxmemoryBytes: 64 * 1024 * 1024 });
        expect(String(line.msg)).toMatch(/may evict limiter counters/);
      }
      await lockedServe.waitForLog((l) => l.event === 'redis_memory_policy_unread', 10_000, 'the unread note');
      expect(lockedServe.logs.some((l) => l.event === 'redis_eviction_policy')).toBe(false);
      expect((await fetch(`${lockedServe.url}/healthz`)).status).toBe(200);
    } finally {
      await stopAll(...procs);
      await Promise.all([lru.dispose(), locked.dispose()]);
    }
  });
});
