// e2e: the submit endpoint and job status of `sluice serve`, with `sluice worker` running a module
// handler — 202 then completion, the 429 path with its exact headers, and every bad-input answer.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { postJson, startSluice, stopAll, tempDir, waitForJob, type JobView, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

const HANDLER = `// echoes its job back, so the test can see exactly what the worker ran
export default async function echo(job) {
  if (job.data && job.data.sleepMs) await new Promise((resolve) => setTimeout(resolve, job.data.sleepMs));
  return { echoed: job.data, cost: job.cost, attempt: job.attemptsMade };
}
`;

// 'paced' and 'full' are served but no worker runs them (the worker's rules file lacks them): their
// jobs stay queued, so the admission answers are fixed numbers, not races with a draining lane.
const SERVE_RULES = `auth: none
queues:
  - name: orders
    rate_per_second: 20
    capacity: 5
    max_payload_bytes: 100
    handler: { type: module, path: ./echo.mjs }
  - name: paced
    rate_per_second: 0.5
    capacity: 10
    max_wait: 3s
    handler: { type: module, path: ./echo.mjs }
  - name: full
    rate_per_second: 1
    capacity: 2
    handler: { type: module, path: ./echo.mjs }
  - name: tenants
    rate_per_second: 20
    capacity: 5
    key: header:X-Tenant
    handler: { type: module, path: ./echo.mjs }
`;
const WORKER_RULES = `queues:
  - name: orders
    rate_per_second: 20
    capacity: 5
    max_payload_bytes: 100
    handler: { type: module, path: ./echo.mjs }
`;
const BODY_LIMIT = 300;

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;
let worker: SluiceProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('submit');
  dir.write('echo.mjs', HANDLER);
  const config = dir.write('rules.yaml', SERVE_RULES);
  const workerConfig = dir.write('worker-rules.yaml', WORKER_RULES);
  [serve, worker] = await Promise.all([
    startSluice('serve', { config, redisUrl: redis.url, args: ['--body-limit', String(BODY_LIMIT)] }),
    startSluice('worker', { config: workerConfig, redisUrl: redis.url }),
  ]);
});

afterAll(async () => {
  await stopAll(serve, worker);
  await redis?.dispose();
  dir?.dispose();
});

const submit = (queue: string, body: unknown, headers?: Record<string, string>) => postJson(`${serve.url}/v1/queues/${queue}/jobs`, body, headers);

describe('202 Accepted, then the job completes', () => {
  it('answers 202 with Location and { id, queue, state, startsAt, position }, and the status shows the result', async () => {
    const before = Date.now();
    const res = await submit('orders', { key: 'tenant-a', payload: { order: 42, items: ['a', 'b'] } });
    const after = Date.now();
    expect(res.status).toBe(202);
    const body = (await res.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['id', 'position', 'queue', 'startsAt', 'state']);
    expect(body).toMatchObject({ queue: 'orders', state: 'queued', position: 0 });
    expect(body.id).toMatch(/^j[A-Za-z0-9_-]{16}$/);
    expect(res.headers.get('location')).toBe(`/v1/queues/orders/jobs/${String(body.id)}`);
    // startsAt is an ISO instant: the first job of an idle lane starts now (Redis time, same machine).
    const startsAt = String(body.startsAt);
    expect(new Date(startsAt).toISOString()).toBe(startsAt);
    expect(Date.parse(startsAt)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(startsAt)).toBeLessThanOrEqual(after + 5);

    const job = await waitForJob(serve.url, res.headers.get('location')!);
    expect(job).toMatchObject({
      id: body.id,
      queue: 'orders',
      state: 'completed',
      attemptsMade: 1,
      startsAt,
      result: { echoed: { order: 42, items: ['a', 'b'] }, cost: 1, attempt: 0 },
    });
    expect(Date.parse(job.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(job.startedAt!));
    expect(job.failedReason).toBeUndefined();
  });

  it('the second job of a lane is at position 1 and starts one interval (2 s, stretched 1%) later', async () => {
    const first = (await (await submit('paced', { key: 'positions', payload: 1 })).json()) as { position: number; startsAt: string };
    const second = (await (await submit('paced', { key: 'positions', payload: 2 })).json()) as { position: number; startsAt: string };
    expect([first.position, second.position]).toEqual([0, 1]);
    // paced: 0.5 per second, so one interval is 2 s, stretched by the 1% pacing margin to 2.02 s;
    // with no worker the predictions are made from each submit's own clock reading.
    const gap = Date.parse(second.startsAt) - Date.parse(first.startsAt);
    expect(gap).toBeGreaterThanOrEqual(2020);
    expect(gap).toBeLessThan(2020 + 200);
  });

  it('the same idempotency key is admitted once', async () => {
    const a = (await (await submit('orders', { key: 'tenant-b', payload: { n: 1 }, idempotencyKey: 'order-7' })).json()) as Record<string, unknown>;
    const b = (await (await submit('orders', { key: 'tenant-b', payload: { n: 2 }, idempotencyKey: 'order-7' })).json()) as Record<string, unknown>;
    expect(b.id).toBe(a.id);
    expect(b.duplicate).toBe(true);
    const job = await waitForJob(serve.url, `/v1/queues/orders/jobs/${String(a.id)}`);
    expect(job.result).toEqual({ echoed: { n: 1 }, cost: 1, attempt: 0 });
  });
});

describe('job status consistency', () => {
  // Throttle.job() (src/throttle/throttle.ts) reads the BullMQ job hash, then its state, in two calls:
  // a job that finishes in between is reported 'completed' from a hash read while it was active —
  // attemptsMade 0, no result (null), no finishedAt. Reported to the throttle's owner; `fails` marks
  // it known, and turns red once it is fixed so that `.fails` is removed.
  it('a job reported completed always carries its result and finish time', async () => {
    const seen: JobView[] = [];
    for (let i = 0; i < 30; i++) {
      const res = await submit('orders', { key: `race-${i}`, payload: { sleepMs: 5 } });
      const location = res.headers.get('location')!;
      for (;;) {
        const job = (await (await fetch(serve.url + location)).json()) as JobView;
        if (job.state === 'completed') {
          seen.push(job);
          break;
        }
      }
    }
    expect(seen.filter((j) => j.finishedAt === undefined || j.result === null)).toEqual([]);
  });
});

describe('429 with exact headers', () => {
  it('wait_too_long: Retry-After is the excess wait rounded up (1.04 s -> 2), with RateLimit and X-RateLimit-* fields', async () => {
    // paced: interval 2.02 s, max_wait 3 s. Jobs 1 and 2 would start at +0 and +2.02 s; job 3 at
    // +4.04 s, which is 1.04 s more than max_wait allows.
    for (let i = 0; i < 2; i++) expect((await submit('paced', { key: 'slow', payload: i })).status).toBe(202);
    const before = Date.now();
    const res = await submit('paced', { key: 'slow', payload: 3 });
    const after = Date.now();
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('2');
    // Quota: the lane's capacity, drained in 10 / 0.5 = 20 s; remaining: nothing can be admitted
    // before the reset, even though the lane has room (the refusal is for the wait).
    expect(res.headers.get('ratelimit-policy')).toBe('"paced";q=10;w=20');
    expect(res.headers.get('ratelimit')).toBe('"paced";r=0;t=2');
    expect(res.headers.get('x-ratelimit-limit')).toBe('10');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    // Epoch seconds (the default of every other response, as GitHub sends it): when the wait fits.
    const reset = Number(res.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThanOrEqual(Math.ceil((before + 1040) / 1000));
    expect(reset).toBeLessThanOrEqual(Math.ceil((after + 1040) / 1000));
    expect(await res.json()).toEqual({
      error: 'rate_limit_exceeded',
      retry_after: 2,
      reason: 'wait_too_long',
      message: "the wait in queue 'paced' would be longer than allowed; retry in 2 s",
    });
  });

  it('queue_full: a lane at capacity answers Retry-After 1 (1 ms, rounded up to at least 1 s)', async () => {
    for (let i = 0; i < 2; i++) expect((await submit('full', { key: 'k', payload: i })).status).toBe(202);
    const res = await submit('full', { key: 'k', payload: 'one too many' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('ratelimit-policy')).toBe('"full";q=2;w=2');
    expect(res.headers.get('ratelimit')).toBe('"full";r=0;t=1');
    expect(res.headers.get('x-ratelimit-limit')).toBe('2');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(await res.json()).toEqual({
      error: 'rate_limit_exceeded',
      retry_after: 1,
      reason: 'queue_full',
      message: "queue 'full' is full for this key (capacity 2); retry in 1 s",
    });
    // Another key has its own lane.
    expect((await submit('full', { key: 'other', payload: 0 })).status).toBe(202);
  });

  it('a cost larger than the room left is 429; a cost larger than the capacity is 400 naming `cost`', async () => {
    expect((await submit('full', { key: 'costly', payload: 0, cost: 2 })).status).toBe(202);
    const full = await submit('full', { key: 'costly', payload: 0, cost: 1 });
    expect(full.status).toBe(429);
    expect(((await full.json()) as { reason: string }).reason).toBe('queue_full');
    const never = await submit('full', { key: 'fresh', payload: 0, cost: 3 });
    expect(never.status).toBe(400);
    const message = "3 is larger than the lane capacity 2 of queue 'full'; it could never be admitted";
    expect(await never.json()).toEqual({
      error: 'invalid_request',
      code: 'SLUICE_ERR_INVALID_REQUEST',
      message: `invalid request body: cost: ${message}`,
      issues: [{ path: 'cost', message, code: 'too_big' }],
    });
  });
});

describe('bad input', () => {
  it('an invalid body is 400 invalid_request naming every field', async () => {
    const res = await submit('orders', { key: '', cost: 0, colour: 'red' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; message: string; issues: { path: string; message: string; code: string }[] };
    expect(body.error).toBe('invalid_request');
    expect(body.issues.map((i) => i.path).sort()).toEqual(['colour', 'cost', 'key', 'payload']);
    expect(body.issues.find((i) => i.path === 'colour')).toEqual({ path: 'colour', message: 'unknown field', code: 'unrecognized_keys' });
    expect(body.issues.find((i) => i.path === 'cost')?.code).toBe('too_small');
    expect(body.message).toMatch(/^invalid request body: /);
    expect(body.message).toContain('cost: ');
  });

  it('a body that is not JSON is 400 invalid_request', async () => {
    const res = await fetch(`${serve.url}/v1/queues/orders/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"payload": ' });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; message: string };
    expect(body.error).toBe('invalid_request');
    expect(body.message).toMatch(/^request body is not valid JSON: /);
  });

  it('a missing lane key (body source) is 400 naming `key`', async () => {
    const res = await submit('orders', { payload: 1 });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: 'invalid_request',
      code: 'SLUICE_ERR_INVALID_REQUEST',
      message: "queue 'orders' takes its key from the body's `key`, and the request has none",
      issues: [{ path: 'key', message: "required: the lane key (the body's `key`)", code: 'invalid_type' }],
    });
  });

  it('a missing key header (header source) is 400; with the header the job is admitted', async () => {
    const res = await submit('tenants', { payload: 1 });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toBe("queue 'tenants' takes its key from the X-Tenant header, and the request has none");
    expect((await submit('tenants', { payload: 1 }, { 'x-tenant': 'acme' })).status).toBe(202);
  });

  it('an unknown queue is 404, on submit and on status', async () => {
    const res = await submit('nope', { key: 'k', payload: 1 });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'not_found', code: 'SLUICE_ERR_NOT_FOUND', message: "no queue 'nope'" });
    const status = await fetch(`${serve.url}/v1/queues/nope/jobs/j123`);
    expect(status.status).toBe(404);
    expect(await status.json()).toEqual({ error: 'not_found', code: 'SLUICE_ERR_NOT_FOUND', message: "no queue 'nope'" });
  });

  it('a body over --body-limit is 413; one just under it is accepted', async () => {
    const big = { key: 'k', payload: 'x'.repeat(BODY_LIMIT) };
    const res = await submit('orders', big);
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({ error: 'payload_too_large', code: 'SLUICE_ERR_BODY_TOO_LARGE', message: `request body is larger than the limit of ${BODY_LIMIT} bytes` });
    // 300 bytes exactly passes the body limit; its payload then trips the queue's own 100-byte limit.
    const text = JSON.stringify({ key: 'k', payload: '' });
    const exact = { key: 'k', payload: 'y'.repeat(BODY_LIMIT - text.length) };
    expect(JSON.stringify(exact).length).toBe(BODY_LIMIT);
    const atLimit = await submit('orders', exact);
    expect(atLimit.status).toBe(413);
    const body = (await atLimit.json()) as { error: string; message: string };
    expect(body).toEqual({ error: 'payload_too_large', code: 'SLUICE_ERR_PAYLOAD_TOO_LARGE', message: `payload: ${BODY_LIMIT - text.length + 2} bytes, more than the throttle's maxPayloadBytes 100` });
  });

  it('a wrong content type is 415 naming it', async () => {
    const res = await fetch(`${serve.url}/v1/queues/orders/jobs`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"key":"k","payload":1}' });
    expect(res.status).toBe(415);
    expect(await res.json()).toEqual({ error: 'unsupported_media_type', code: 'SLUICE_ERR_UNSUPPORTED_MEDIA_TYPE', message: 'content type must be application/json (got text/plain)' });
    const none = await fetch(`${serve.url}/v1/queues/orders/jobs`, { method: 'POST', body: new Uint8Array([123, 125]) });
    expect(none.status).toBe(415);
    expect(((await none.json()) as { message: string }).message).toBe('content type must be application/json (got none)');
  });

  it('an unknown job is 404', async () => {
    const res = await fetch(`${serve.url}/v1/queues/orders/jobs/jDoesNotExist000000`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: 'not_found',
      code: 'SLUICE_ERR_NOT_FOUND',
      message: "no job 'jDoesNotExist000000' in queue 'orders' (unknown, or removed after its retention)",
    });
  });

  it('an unknown route is 404 in the same JSON shape', async () => {
    const res = await fetch(`${serve.url}/v2/anything`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'not_found', code: 'SLUICE_ERR_NOT_FOUND', message: 'no route GET /v2/anything' });
  });
});

describe('graceful shutdown', () => {
  it('serve and worker exit 0 on SIGTERM and log "stopped"; a request in flight is answered first', async () => {
    // Redis holds every write for 1 s, so a submit is still inside serve when the signal arrives.
    const raw = new Redis(redis.port, '127.0.0.1');
    await raw.client('PAUSE', 1000, 'WRITE');
    raw.disconnect();
    const sentAt = Date.now();
    const inFlight = submit('orders', { key: 'last-one', payload: 'in flight' });
    await new Promise((r) => setTimeout(r, 300));
    const stopping = Promise.all([serve.stop(), worker.stop()]);
    const res = await inFlight;
    expect(res.status).toBe(202);
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(900);
    expect(((await res.json()) as { queue: string }).queue).toBe('orders');
    const [s, w] = await stopping;
    expect(s).toEqual({ code: 0, signal: null });
    expect(w).toEqual({ code: 0, signal: null });
    for (const p of [serve, worker]) {
      const events = p.logs.map((l) => l.event).filter((e) => e !== undefined && e !== 'refused');
      expect(events.slice(-3)).toEqual(['signal', 'shutting_down', 'stopped']);
      expect(p.stderr()).toBe('');
    }
  });
});
