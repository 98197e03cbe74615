// e2e: sluice as a least-privilege Redis user — the ACL printed in docs/operations.md, applied as
// written — runs every decision algorithm, a submit and a job to completion with no command or key
// denied (ACL LOG stays empty); a missing or wrong password gets one clear error line at start.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, REPO_ROOT, startSluice, stopAll, tempDir, waitForJob, type SluiceProcess, type TempDir } from '../helpers/e2e.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';

/** The ACL SETUSER line of docs/operations.md (between its markers), the one users copy. */
function documentedAcl(): string[] {
  const doc = readFileSync(join(REPO_ROOT, 'docs', 'operations.md'), 'utf8');
  const block = /<!-- acl-user -->\s*```text\n(ACL SETUSER [^\n]+)\n```/.exec(doc);
  if (!block) throw new Error('docs/operations.md has no <!-- acl-user --> ACL SETUSER block');
  return block[1]!.split(/\s+/).slice(2);
}

const RULES = `auth: none
domains:
  - domain: api
    descriptors:
      - { key: a, policy: { algorithm: sliding-log, limit: 100, window: 1h }, fail_mode: closed }
      - { key: b, policy: { algorithm: token-bucket, capacity: 10, refill_per_second: 1 }, fail_mode: closed }
      - { key: c, policy: { algorithm: concurrency, limit: 10, lease: 1m }, fail_mode: closed }
      - { key: d, policy: { algorithm: fixed-window, limit: 10, window: 1m }, fail_mode: closed }
      - { key: e, policy: { algorithm: sliding-counter, limit: 10, window: 1m }, fail_mode: closed }
      - { key: f, policy: { algorithm: leaky-bucket, rate_per_second: 10, burst: 2 }, fail_mode: closed }
queues:
  - name: jobs
    rate_per_second: 10
    capacity: 10
    handler: { type: module, path: ./done.mjs }
`;

let redis: RedisServer;
let admin: Redis;
let dir: TempDir;
let config: string;
const procs: SluiceProcess[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis({ port: redis.port, host: '127.0.0.1' });
  // The default user gets a password only now: the helper's start-up PING runs without one.
  await admin.config('SET', 'requirepass', 'admin-secret');
  await admin.auth('admin-secret');
  const acl = documentedAcl().map((part) => (part === '>PASSWORD' ? '>sluice-secret' : part));
  expect(acl[0]).toBe('sluice');
  await admin.call('ACL', 'SETUSER', ...acl);
  dir = tempDir('acl');
  dir.write('done.mjs', 'export default async () => "done";\n');
  config = dir.write('rules.yaml', RULES);
});

afterAll(async () => {
  await stopAll(...procs);
  admin?.disconnect();
  await redis?.dispose();
  dir?.dispose();
});

describe('least-privilege Redis user', () => {
  it('decides with every algorithm and runs a job as the documented ACL user, with nothing denied', async () => {
    const url = `redis://sluice:sluice-secret@127.0.0.1:${redis.port}`;
    const [serve, worker] = await Promise.all([startSluice('serve', { config, redisUrl: url, readyTimeoutMs: 60_000 }), startSluice('worker', { config, redisUrl: url, readyTimeoutMs: 60_000 })]);
    procs.push(serve, worker);
    for (const key of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const res = await postJson(`${serve.url}/v1/decisions`, { domain: 'api', descriptors: [{ key, value: 'v' }] });
      const body = (await res.json()) as { allowed: boolean; statuses: { failure?: string }[] };
      expect({ key, status: res.status, allowed: body.allowed, failure: body.statuses[0]!.failure }).toEqual({ key, status: 200, allowed: true, failure: undefined });
    }
    const submitted = await postJson(`${serve.url}/v1/queues/jobs/jobs`, { key: 'k', payload: { n: 1 } });
    expect(submitted.status).toBe(202);
    expect((await waitForJob(serve.url, submitted.headers.get('location')!, 15_000)).state).toBe('completed');
    expect(await admin.call('ACL', 'LOG')).toEqual([]);
    // Keys only under the prefix the ACL grants.
    const keys = (await admin.keys('*')).filter((k) => !k.startsWith('sluice:'));
    expect(keys).toEqual([]);
    expect([...serve.logs, ...worker.logs].filter((l) => (l.level ?? 0) >= 50)).toEqual([]);
  });

  it('NOAUTH and WRONGPASS: one clear error line at start, naming the fix and never the password', async () => {
    const noauth = await startSluice('serve', { config, redisUrl: `redis://127.0.0.1:${redis.port}`, readyTimeoutMs: 60_000 });
    const wrong = await startSluice('serve', { config, redisUrl: `redis://sluice:not-the-password@127.0.0.1:${redis.port}`, readyTimeoutMs: 60_000 });
    procs.push(noauth, wrong);
    const a = await noauth.waitForLog((l) => l.event === 'redis_auth_refused', 10_000, 'the NOAUTH line');
    const b = await wrong.waitForLog((l) => l.event === 'redis_auth_refused', 10_000, 'the WRONGPASS line');
    expect(a).toMatchObject({ level: 50, code: 'NOAUTH' });
    expect(String(a.msg)).toMatch(/Redis requires a password: put user and password in the URL/);
    expect(b).toMatchObject({ level: 50, code: 'WRONGPASS' });
    expect(String(b.msg)).toMatch(/refused the user or password/);
    // Reconnects go on (the password may be fixed on the server), but the line is not repeated.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(wrong.logs.filter((l) => l.event === 'redis_auth_refused')).toHaveLength(1);
    expect(JSON.stringify(wrong.logs)).not.toContain('not-the-password');
    // Two serve processes that cannot reach Redis take ~25 s to come up (their ready wait runs out first).
  }, 90_000);
});
