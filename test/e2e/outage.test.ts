// e2e: `sluice serve` while its Redis is stopped and started again — fail-open rules let calls through
// and say so, fail-closed rules refuse, /readyz answers 503, submits answer 503 with the problem JSON;
// once Redis is back, decisions and submits resume with no restart of sluice; and with Redis down again it still shuts down cleanly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { pollUntil, postJson, sampleValue, scrape, startSluice, stopAll, tempDir, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

const RULES = `auth: none
domains:
  - domain: api
    descriptors:
      - key: search
        name: search-open
        policy: { algorithm: sliding-log, limit: 100, window: 1h }
        fail_mode: open
        timeout: 100ms
      - key: payment
        name: payment-closed
        policy: { algorithm: sliding-log, limit: 100, window: 1h }
        fail_mode: closed
        timeout: 100ms
queues:
  - name: jobs
    rate_per_second: 10
    capacity: 10
    handler: { type: module, path: ./noop.mjs }
`;

interface Answer {
  allowed: boolean;
  retry_after?: number;
  statuses: { code: string; rule: string; allowed: boolean; failure?: string; remaining: number; limit: number }[];
}

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('outage');
  dir.write('noop.mjs', 'export default async () => null;\n');
  serve = await startSluice('serve', { config: dir.write('rules.yaml', RULES), redisUrl: redis.url });
});

afterAll(async () => {
  await stopAll(serve);
  await redis?.dispose();
  dir?.dispose();
});

async function decide(key: 'search' | 'payment'): Promise<Answer> {
  const res = await postJson(`${serve.url}/v1/decisions`, { domain: 'api', descriptors: [{ key, value: 'v' }] });
  expect(res.status).toBe(200);
  return (await res.json()) as Answer;
}

async function readyzStatus(): Promise<number> {
  const res = await fetch(`${serve.url}/readyz`);
  await res.arrayBuffer();
  return res.status;
}

const submit = () => postJson(`${serve.url}/v1/queues/jobs/jobs`, { key: 'k', payload: { at: Date.now() } });

describe('Redis stopped, then started again', () => {
  it('decides normally while Redis is up', async () => {
    expect((await decide('search')).statuses[0]).toMatchObject({ allowed: true, remaining: 99 });
    expect((await decide('payment')).statuses[0]).toMatchObject({ allowed: true, remaining: 99 });
    expect((await submit()).status).toBe(202);
    expect(await readyzStatus()).toBe(200);
  });

  it('with Redis down: /readyz 503, fail-open allows, fail-closed refuses, submit 503', async () => {
    const before = await scrape(serve.url);
    await redis.stop();

    const ready = await pollUntil(
      async () => {
        const res = await fetch(`${serve.url}/readyz`);
        return { status: res.status, body: (await res.json()) as { status: string; checks: { redis: string; rules: string } } };
      },
      (r) => r.status === 503,
      5000,
      50,
      '/readyz to answer 503',
    );
    expect(ready.body).toMatchObject({ status: 'not_ready', checks: { redis: 'unavailable' } });
    expect(ready.body.checks.rules).toMatch(/^[0-9a-f]{12}$/);
    expect(await fetch(`${serve.url}/healthz`).then((r) => r.status)).toBe(200);

    const started = Date.now();
    const open = await decide('search');
    expect(open.allowed).toBe(true);
    expect(open.retry_after).toBeUndefined();
    expect(open.statuses[0]).toMatchObject({ code: 'OK', rule: 'search-open', allowed: true, failure: 'fail-open' });
    const closed = await decide('payment');
    expect(closed.allowed).toBe(false);
    expect(closed.retry_after).toBe(1);
    expect(closed.statuses[0]).toMatchObject({ code: 'OVER_LIMIT', rule: 'payment-closed', allowed: false, failure: 'fail-closed', retry_after_ms: 1000 });
    // Each waited at most its rule's 100 ms deadline (plus the HTTP round trips).
    expect(Date.now() - started).toBeLessThan(1500);

    const refused = await submit();
    expect(refused.status).toBe(503);
    const problem = (await refused.json()) as { error: string; code: string; message: string };
    expect(problem.error).toBe('service_unavailable');
    expect(problem.code).toBe('SLUICE_ERR_REDIS_UNAVAILABLE');
    // Between reconnect attempts the client knows Redis is down and says so at once ("Redis is
    // unavailable"); during one (status `connecting`, longer on a loaded machine) the submit waits for it
    // up to its deadline ("Redis not ready within …", or "no answer from Redis within …"): one code, one
    // status, three wordings, and which one depends on where the reconnect loop is.
    expect(problem.message).toMatch(/^(Redis is unavailable|Redis not ready within \d+ ms|throttle 'jobs' submit: no answer from Redis within \d+ ms)/);

    const after = await scrape(serve.url);
    const delta = (rule: string, outcome: string) =>
      sampleValue(after, 'sluice_decisions_total', { rule, outcome }) - sampleValue(before, 'sluice_decisions_total', { rule, outcome });
    expect(delta('search-open', 'fail-open')).toBe(1);
    expect(delta('payment-closed', 'fail-closed')).toBe(1);
    expect(sampleValue(after, 'sluice_redis_failed_decisions_total', { algorithm: 'sliding-log', mode: 'open' })).toBe(1);
    expect(sampleValue(after, 'sluice_redis_failed_decisions_total', { algorithm: 'sliding-log', mode: 'closed' })).toBe(1);
    // Failed reconnects are counted as they happen (the first one 50 ms after the drop).
    await pollUntil(() => scrape(serve.url), (m) => sampleValue(m, 'sluice_redis_errors_total') > 0, 5000, 50, 'a counted Redis error');
  });

  it('after Redis is started again, decisions and submits resume without restarting sluice', async () => {
    await redis.start(); // same port, empty
    await pollUntil(readyzStatus, (s) => s === 200, 10_000, 100, '/readyz to answer 200 again');
    const closed = await pollUntil(() => decide('payment'), (a) => a.allowed && a.statuses[0]!.failure === undefined, 10_000, 100, 'a real decision');
    // The restarted Redis is empty: the count starts again.
    expect(closed.statuses[0]).toMatchObject({ code: 'OK', allowed: true, limit: 100, remaining: 99 });
    expect((await decide('search')).statuses[0]).toMatchObject({ allowed: true, remaining: 99 });
    expect(((await decide('search')).statuses[0] as { failure?: string }).failure).toBeUndefined();
    const res = await pollUntil(submit, (r) => r.status !== 503, 10_000, 200, 'a submit to be admitted');
    expect(res.status).toBe(202);
    expect(serve.logs.filter((l) => l.event === 'listening')).toHaveLength(1);
    expect(serve.child.exitCode).toBeNull();
  });

  it('shuts down gracefully while Redis is down: exit 0, "stopped" logged, within a few seconds', async () => {
    await redis.stop();
    await pollUntil(readyzStatus, (s) => s === 503, 5000, 50, '/readyz to see Redis gone');
    const started = Date.now();
    expect(await serve.stop('SIGTERM', 10_000)).toEqual({ code: 0, signal: null });
    // A reconnect attempt in progress (connectTimeout 2 s) may hold the exit that long, no longer.
    expect(Date.now() - started).toBeLessThan(5000);
    expect(serve.logs.at(-1)?.event).toBe('stopped');
  });
});
