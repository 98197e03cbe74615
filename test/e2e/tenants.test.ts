// Tenants and the admin API end to end: `sluice serve` and two `sluice worker` processes on a private
// Redis. Keys from hashes and from the environment; 401s; tenant isolation (status, cancel, lanes,
// idempotency keys); plans' capacities; every admin route (queues, lanes, lane detail, overrides
// followed by the second worker within 1 s measured at its starts, jobs, retry, cancel, pause,
// resume, drain, decision reset, audit) and the OpenAPI document.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil, postJson, startSluice, stopAll, tempDir, type SluiceProcess, type TempDir } from '../helpers/e2e.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';

const ADMIN = 'e2e-admin-token-0123456789';
const ACME = 'acme-key-1';
const GLOBEX = 'globex-key-from-env';
const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

// The handler records when and where it ran; payload { fail: true } fails (for retry).
const HANDLER = `export default async (job) => {
  if (job.data && job.data.fail) throw new Error('asked to fail');
  if (job.data && job.data.hold) await new Promise((r) => setTimeout(r, job.data.hold));
  return { at: Date.now(), pid: process.pid, lane: job.lane };
};
`;
const RULES = `auth:
  tenants:
    acme: { plan: pro, keys: [${sha('acme-old-key')}, ${sha(ACME)}] }
    globex: { plan: free, keys: [{ env: E2E_GLOBEX_KEY }] }
domains:
  - domain: api
    descriptors:
      - key: user
        rate_limit: { unit: minute, requests_per_unit: 1 }
queues:
  - name: orders
    rate_per_second: 1
    capacity: 1
    plans:
      free: { rate_per_second: 2, capacity: 3 }
      pro: { rate_per_second: 20, capacity: 60 }
    default_plan: free
    handler: { type: module, path: ./run.mjs }
  - name: users
    rate_per_second: 0.2
    capacity: 5
    key: body
    handler: { type: module, path: ./run.mjs }
`;

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;
let workers: SluiceProcess[] = [];

const env = { SLUICE_ADMIN_TOKEN: ADMIN, E2E_GLOBEX_KEY: GLOBEX };
const auth = (key: string) => ({ authorization: `Bearer ${key}` });
const admin = { authorization: `Bearer ${ADMIN}`, 'x-sluice-actor': 'e2e-ops' };

async function call(method: string, path: string, headers: Record<string, string> = {}, body?: unknown) {
  const res = await fetch(`${serve.url}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, any>) : {} };
}
const submit = (queue: string, key: string, payload: unknown, extra: Record<string, unknown> = {}) => call('POST', `/v1/queues/${queue}/jobs`, auth(key), { payload, ...extra });

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('tenants');
  dir.write('run.mjs', HANDLER);
  const config = dir.write('rules.yaml', RULES);
  [serve, ...workers] = await Promise.all([
    startSluice('serve', { config, redisUrl: redis.url, env, readyTimeoutMs: 60_000 }),
    startSluice('worker', { config, redisUrl: redis.url, env, readyTimeoutMs: 60_000 }),
    startSluice('worker', { config, redisUrl: redis.url, env, readyTimeoutMs: 60_000 }),
  ]);
});
afterAll(async () => {
  await stopAll(serve, ...workers);
  await redis?.dispose();
  dir?.dispose();
});

describe('authentication', () => {
  it('refuses a missing or wrong key with 401 and WWW-Authenticate on every tenant route', async () => {
    for (const [method, path, body] of [
      ['POST', '/v1/queues/orders/jobs', { payload: 1 }],
      ['GET', '/v1/queues/orders/jobs/j1', undefined],
      ['DELETE', '/v1/queues/orders/jobs/j1', undefined],
      ['POST', '/v1/decisions', { domain: 'api', descriptors: [{ key: 'user', value: 'u' }] }],
      ['POST', '/v1/decisions/release', { domain: 'api', descriptor: { key: 'user', value: 'u' }, lease_id: 'x' }],
    ] as const) {
      for (const headers of [{}, auth('wrong'), { 'x-api-key': 'wrong' }, auth(ADMIN)] as Record<string, string>[]) {
        const res = await call(method, path, headers, body);
        expect(res.status, `${method} ${path}`).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Bearer realm="sluice"');
        expect(res.body.code).toBe('SLUICE_ERR_UNAUTHORIZED');
      }
    }
    // Both headers, every configured key (old and new of a rotation, and one from the environment).
    expect((await call('POST', '/v1/queues/users/jobs', { 'x-api-key': 'acme-old-key' }, { key: 'u1', payload: 1 })).status).toBe(202);
    expect((await call('POST', '/v1/queues/users/jobs', auth(GLOBEX), { key: 'u1', payload: 1 })).status).toBe(202);
    expect((await call('POST', '/v1/decisions', auth(ACME), { domain: 'api', descriptors: [{ key: 'user', value: 'u' }] })).status).toBe(200);
    // No raw key in any log line.
    const logs = JSON.stringify([serve.logs, ...workers.map((w) => w.logs)]);
    for (const secret of [ACME, GLOBEX, ADMIN, 'acme-old-key']) expect(logs).not.toContain(secret);
  });

  it('guards the admin API with the admin token only', async () => {
    for (const headers of [{}, auth(ACME), auth('nope')]) {
      const res = await call('GET', '/v1/admin/queues', headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toContain('Bearer');
    }
    expect((await call('GET', '/v1/admin/nothing-here', {})).status).toBe(401);
    expect((await call('GET', '/v1/admin/queues', admin)).status).toBe(200);
  });
});

describe('isolation', () => {
  it('hides a job from another tenant (status and cancel 404) and keeps lanes and idempotency keys apart', async () => {
    const mine = await submit('users', ACME, { hold: 0 }, { key: 'shared-user', idempotencyKey: 'same' });
    expect(mine.status).toBe(202);
    const theirs = await submit('users', GLOBEX, { hold: 0 }, { key: 'shared-user', idempotencyKey: 'same' });
    expect(theirs.status).toBe(202);
    // A second job each, so the lanes hold queued work (the first starts at once) and show in the busy index.
    for (const key of [ACME, GLOBEX]) expect((await submit('users', key, 2, { key: 'shared-user' })).status).toBe(202);
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect(theirs.body.duplicate).toBeUndefined();
    const path = `/v1/queues/users/jobs/${mine.body.id}`;
    expect((await call('GET', path, auth(GLOBEX))).status).toBe(404);
    expect((await call('DELETE', path, auth(GLOBEX))).status).toBe(404);
    expect((await call('GET', path, auth(ACME))).status).toBe(200);
    // Each tenant's end user has its own lane, under the tenant.
    const lanes = await call('GET', '/v1/admin/queues/users/lanes', admin);
    const ids = lanes.body.lanes.map((l: { lane: string }) => l.lane);
    expect(ids).toContain('acme/shared-user');
    expect(ids).toContain('globex/shared-user');
  });
});

describe('plans', () => {
  it("give each tenant its plan's capacity", async () => {
    // free: capacity 3 at 2/s; a burst of 6 within a few ms cannot all fit (at most one starts meanwhile).
    const free = await Promise.all(Array.from({ length: 6 }, (_, i) => submit('orders', GLOBEX, { i })));
    const refused = free.filter((r) => r.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    expect(refused[0]!.body.reason).toBe('queue_full');
    expect(free.filter((r) => r.status === 202).length).toBeLessThanOrEqual(4);
    // pro: capacity 60.
    const pro = await Promise.all(Array.from({ length: 10 }, (_, i) => submit('orders', ACME, { i })));
    expect(pro.every((r) => r.status === 202)).toBe(true);
    const detail = await call('GET', '/v1/admin/queues/orders/lanes/globex', admin);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ lane: 'globex', plan: 'free', limits: { ratePerSecond: 2, capacity: 3 } });
  });
});

describe('admin: overrides', () => {
  it('a rate override is followed by both worker processes within 1 s, measured at the starts', async () => {
    // Start from a known lane: no override left by an earlier attempt, nothing queued (the plans test's
    // jobs drain at pro's 20/s), so a retry of this test measures the same thing as its first run.
    await call('DELETE', '/v1/admin/queues/orders/overrides/acme', admin);
    await pollUntil(() => call('GET', '/v1/admin/queues/orders/lanes/acme', admin), (r) => r.status === 404 || r.body.depth === 0, 30_000, 100, 'an empty acme lane');
    const jobs = await Promise.all(Array.from({ length: 40 }, (_, i) => submit('orders', ACME, { i, hold: 0 })));
    expect(jobs.every((r) => r.status === 202)).toBe(true);
    const statuses = () => Promise.all(jobs.map(async (j) => (await call('GET', `/v1/queues/orders/jobs/${j.body.id}`, auth(ACME))).body as { state: string; result?: { at: number; pid: number } }));
    // Pro's 20/s runs a few of them before the override (waited for, not assumed from a fixed sleep).
    await pollUntil(statuses, (rs) => rs.filter((r) => r.state === 'completed').length >= 3, 10_000, 50, 'three starts at the pro rate');
    const set = await call('PUT', '/v1/admin/queues/orders/overrides/acme', admin, { ratePerSecond: 2 });
    const t0 = Date.now();
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ lane: 'acme', ratePerSecond: 2, by: 'e2e-ops' });
    await new Promise((r) => setTimeout(r, 3_500));
    const results = await statuses();
    const starts = results.flatMap((r) => (r.state === 'completed' && r.result ? [r.result] : [])).sort((a, b) => a.at - b.at);
    const before = starts.filter((s) => s.at < t0);
    const after = starts.filter((s) => s.at >= t0 + 1_000);
    expect(before.length).toBeGreaterThan(2); // pro's 20/s ran before the override
    // From 1 s after the override on, the lane starts at most 2/s across both workers.
    for (let i = 1; i < after.length; i++) expect(after[i]!.at - after[i - 1]!.at).toBeGreaterThanOrEqual(480);
    expect(after.length).toBeGreaterThanOrEqual(3);
    expect(after.length).toBeLessThanOrEqual(6);
    expect(new Set(starts.map((s) => s.pid)).size).toBe(2);
    const listed = await call('GET', '/v1/admin/queues/orders/overrides', admin);
    expect(listed.body.overrides).toEqual([expect.objectContaining({ lane: 'acme', ratePerSecond: 2 })]);
    const bad = await call('PUT', '/v1/admin/queues/orders/overrides/acme', admin, { ratePerSecond: -1, capacity: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.body.issues.map((i: { path: string }) => i.path).sort()).toEqual(['capacity', 'ratePerSecond']);
    expect((await call('DELETE', '/v1/admin/queues/orders/overrides/acme', admin)).status).toBe(200);
    expect((await call('DELETE', '/v1/admin/queues/orders/overrides/acme', admin)).status).toBe(404);
  });
});

describe('admin: queues, lanes, jobs', () => {
  it('shows queues with live figures, pages lanes, and details a lane', async () => {
    const q = await call('GET', '/v1/admin/queues', admin);
    const orders = q.body.queues.find((x: { name: string }) => x.name === 'orders');
    expect(orders.config).toMatchObject({ ratePerSecond: 1, capacity: 1, key: 'tenant', defaultPlan: 'free', plans: { pro: { ratePerSecond: 20, capacity: 60 } } });
    expect(orders.live.startedLast60s).toBeGreaterThan(0);
    expect(orders.live.refusedLast60s).toBeGreaterThan(0);
    expect(typeof orders.live.queued).toBe('number');
    for (const key of ['page-a', 'page-b']) for (let i = 0; i < 2; i++) expect((await submit('users', ACME, i, { key })).status).toBe(202);
    const page = await call('GET', '/v1/admin/queues/users/lanes?limit=1', admin);
    expect(page.body.lanes).toHaveLength(1);
    const next = await call('GET', `/v1/admin/queues/users/lanes?limit=1&cursor=${page.body.next}`, admin);
    expect(next.body.lanes[0].lane).not.toBe(page.body.lanes[0].lane);
    expect((await call('GET', '/v1/admin/queues/users/lanes?limit=0', admin)).status).toBe(400);
    expect((await call('GET', '/v1/admin/queues/users/lanes?cursor=garbage', admin)).status).toBe(400);
    expect((await call('GET', '/v1/admin/queues/nope/lanes', admin)).status).toBe(404);
    expect((await call('GET', '/v1/admin/queues/users/lanes/nobody', admin)).status).toBe(404);
  });

  it('cancels a queued job (units freed), refuses a started one with 409, retries a failed one', async () => {
    // A fresh lane per attempt: a retry must not meet the 0.2/s spacing its first run left behind.
    const key = `cancel-me-${Date.now()}`;
    const queued = await submit('users', ACME, 1, { key });
    const second = await submit('users', ACME, 2, { key });
    const third = await submit('users', ACME, 3, { key });
    const lane = encodeURIComponent(`acme/${key}`);
    // The first started at once (an idle lane); two wait, 5 s apart.
    const before = await call('GET', `/v1/admin/queues/users/lanes/${lane}`, admin);
    expect(before.body.depth).toBe(2);
    expect(before.body.queued.map((j: { id: string }) => j.id)).toEqual([second.body.id, third.body.id]);
    const cancelled = await call('DELETE', `/v1/queues/users/jobs/${second.body.id}`, auth(ACME));
    expect(cancelled.body).toMatchObject({ cancelled: true, freedUnits: 1 });
    const byAdmin = await call('POST', `/v1/admin/queues/users/jobs/${third.body.id}/cancel`, admin);
    expect(byAdmin.body).toMatchObject({ cancelled: true, freedUnits: 1 });
    expect((await call('GET', `/v1/queues/users/jobs/${third.body.id}`, auth(ACME))).status).toBe(404);
    const done = await pollUntil(() => call('GET', `/v1/queues/users/jobs/${queued.body.id}`, auth(ACME)), (r) => r.body.state === 'completed', 15_000, 200, 'the first job');
    expect(done.body.state).toBe('completed');
    const conflict = await call('POST', `/v1/admin/queues/users/jobs/${queued.body.id}/cancel`, admin);
    expect(conflict.status).toBe(409);
    expect(conflict.body.state).toBe('completed');

    const failing = await submit('orders', ACME, { fail: true });
    await pollUntil(() => call('GET', `/v1/admin/queues/orders/jobs/${failing.body.id}`, admin), (r) => r.body.state === 'failed', 15_000, 200, 'the failure');
    const failed = await call('GET', '/v1/admin/queues/orders/jobs?state=failed&limit=10', admin);
    expect(failed.body.jobs.map((j: { id: string }) => j.id)).toContain(failing.body.id);
    expect(failed.body.jobs[0]).toMatchObject({ tenant: 'acme', plan: 'pro', lane: 'acme', failedReason: 'asked to fail' });
    const retried = await call('POST', `/v1/admin/queues/orders/jobs/${failing.body.id}/retry`, admin);
    expect(retried.status).toBe(202);
    expect((await call('POST', `/v1/admin/queues/orders/jobs/${queued.body.id}/retry`, admin)).status).toBe(404);
    expect((await call('POST', `/v1/admin/queues/users/jobs/${queued.body.id}/retry`, admin)).status).toBe(409);
  });

  it('pauses and resumes a lane and a queue, drains and undrains, resets a decision key', async () => {
    const until = new Date(Date.now() + 60_000).toISOString();
    const lp = await call('POST', '/v1/admin/queues/users/lanes/acme%2Fpaused/pause', admin, { until });
    expect(lp.body).toMatchObject({ lane: 'acme/paused', paused: true });
    const held = await submit('users', ACME, 1, { key: 'paused' });
    expect(Date.parse(held.body.startsAt)).toBeGreaterThanOrEqual(Date.parse(until) - 1_000);
    expect((await call('POST', '/v1/admin/queues/users/lanes/acme%2Fpaused/resume', admin)).body.paused).toBe(false);
    await pollUntil(() => call('GET', `/v1/queues/users/jobs/${held.body.id}`, auth(ACME)), (r) => r.body.state === 'completed', 15_000, 200, 'the resumed lane');

    expect((await call('POST', '/v1/admin/queues/orders/pause', admin, {})).body.paused).toBe(true);
    const waiting = await submit('orders', ACME, 'while paused');
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await call('GET', `/v1/queues/orders/jobs/${waiting.body.id}`, auth(ACME))).body.state).toBe('queued');
    expect((await call('GET', '/v1/admin/queues', admin)).body.queues.find((x: { name: string }) => x.name === 'orders').live.paused).toBe(true);
    expect((await call('POST', '/v1/admin/queues/orders/resume', admin)).body.paused).toBe(false);
    await pollUntil(() => call('GET', `/v1/queues/orders/jobs/${waiting.body.id}`, auth(ACME)), (r) => r.body.state === 'completed', 15_000, 200, 'the resumed queue');

    expect((await call('POST', '/v1/admin/queues/orders/drain', admin)).body.draining).toBe(true);
    const drained = await submit('orders', ACME, 1);
    expect(drained.status).toBe(503);
    expect(drained.body).toMatchObject({ code: 'SLUICE_ERR_DRAINING', reason: 'draining' });
    expect((await call('POST', '/v1/admin/queues/orders/undrain', admin)).body.draining).toBe(false);
    expect((await submit('orders', ACME, 1)).status).toBe(202);

    const decide = () => call('POST', '/v1/decisions', auth(ACME), { domain: 'api', descriptors: [{ key: 'user', value: 'reset-me' }] });
    expect((await decide()).body.allowed).toBe(true);
    expect((await decide()).body.allowed).toBe(false);
    const reset = await call('POST', '/v1/admin/decisions/reset', admin, { domain: 'api', descriptor: { key: 'user', value: 'reset-me' } });
    expect(reset.body).toEqual({ domain: 'api', rule: 'api.user', reset: true });
    expect((await decide()).body.allowed).toBe(true);
  });

  it('records every admin action in the audit stream, and documents every route', async () => {
    const audit = await call('GET', '/v1/admin/audit?limit=100', admin);
    const actions = audit.body.entries.map((e: { action: string }) => e.action);
    for (const a of ['override.set', 'override.remove', 'job.cancel', 'job.retry', 'lane.pause', 'lane.resume', 'queue.pause', 'queue.resume', 'queue.drain', 'queue.undrain', 'decision.reset']) {
      expect(actions).toContain(a);
    }
    expect(audit.body.entries[0]).toMatchObject({ who: 'e2e-ops', token: createHash('sha256').update(ADMIN).digest('hex').slice(0, 8) });
    const doc = await call('GET', '/v1/openapi.json');
    expect(doc.body.paths['/v1/admin/queues/{queue}/lanes/{lane}'].get).toBeDefined();
  });
});
