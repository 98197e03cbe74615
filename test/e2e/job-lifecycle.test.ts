// e2e: following a job over HTTP with `sluice serve` and `sluice worker` as real processes — the
// long-poll (?wait=) answers when the worker finishes the job, the SSE stream carries the job's state,
// transitions and progress, both keep tenants apart, open waits are counted, bad `wait` is a 400, and
// an SSE client that never reads is dropped (counted) while the server goes on.
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { verifySignature } from '../../src/callbacks/sign.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil, sampleValue, scrape, startSluice, stopAll, tempDir, type SluiceProcess, type TempDir } from '../helpers/e2e.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { Redis } from 'ioredis';
import { FINISH_LOOK_MS } from '../../src/throttle/finish-watch.js';

const ACME = 'acme-key-lifecycle';
const GLOBEX = 'globex-key-lifecycle';
const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

// payload: { progress: [values] } reported in order; { hold: ms } before returning; { spam: n, size: bytes } n big progress reports.
const HANDLER = `export default async (job) => {
  const p = job.data || {};
  for (const v of p.progress || []) await job.progress(v);
  if (p.spam) { const pad = 'x'.repeat(p.size); for (let i = 0; i < p.spam; i++) await job.progress({ i, pad }); }
  if (p.hold) await new Promise((r) => setTimeout(r, p.hold));
  if (p.fail) throw new Error('asked to fail');
  return { done: p.tag ?? null };
};
`;
const SECRET = 'whsec-e2e-lifecycle';
const RULES = `callbacks:
  allow: ['127.0.0.1', '*.example.com']
auth:
  tenants:
    acme: { keys: [${sha(ACME)}] }
    globex: { keys: [${sha(GLOBEX)}] }
queues:
  - name: work
    rate_per_second: 1
    capacity: 5
    key: body
    handler: { type: module, path: ./run.mjs }
  - name: idle
    rate_per_second: 0.01
    capacity: 5
    key: body
    handler: { type: module, path: ./run.mjs }
`;
// The worker runs 'work' only: 'idle' jobs stay queued.
const WORKER_RULES = `queues:
  - name: work
    rate_per_second: 1
    capacity: 5
    key: body
    handler: { type: module, path: ./run.mjs }
`;

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;
let worker: SluiceProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('lifecycle');
  dir.write('run.mjs', HANDLER);
  const config = dir.write('rules.yaml', RULES);
  const workerConfig = dir.write('worker-rules.yaml', WORKER_RULES);
  [serve, worker] = await Promise.all([
    startSluice('serve', { config, redisUrl: redis.url, readyTimeoutMs: 60_000 }),
    startSluice('worker', { config: workerConfig, redisUrl: redis.url, readyTimeoutMs: 60_000, env: { SLUICE_CALLBACK_SECRET: SECRET } }),
  ]);
});
afterAll(async () => {
  await stopAll(serve, worker);
  await redis?.dispose();
  dir?.dispose();
});

const auth = (key: string) => ({ authorization: `Bearer ${key}` });
async function call(method: string, path: string, key?: string, body?: unknown) {
  const res = await fetch(`${serve.url}${path}`, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(key ? auth(key) : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, any>) : {} };
}
async function submit(queue: string, laneKey: string, payload: unknown, key = ACME, extra: Record<string, unknown> = {}): Promise<{ id: string; startsAt: string }> {
  const res = await call('POST', `/v1/queues/${queue}/jobs`, key, { key: laneKey, payload, ...extra });
  expect(res.status).toBe(202);
  return res.body as { id: string; startsAt: string };
}
const waitsOpen = async (kind: string) => sampleValue(await scrape(serve.url), 'sluice_job_waits_open', { kind });

/** Reads an SSE response to its end: every event's name, id and parsed data. */
async function readEvents(res: Response): Promise<{ event: string; id?: string; data: any }[]> {
  const text = await res.text();
  const events: { event: string; id?: string; data: any }[] = [];
  for (const block of text.split('\n\n')) {
    const fields = new Map<string, string>();
    for (const line of block.split('\n')) {
      const at = line.indexOf(': ');
      if (at > 0) fields.set(line.slice(0, at), line.slice(at + 2));
    }
    if (fields.has('event')) events.push({ event: fields.get('event')!, ...(fields.has('id') ? { id: fields.get('id')! } : {}), data: JSON.parse(fields.get('data')!) });
  }
  return events;
}

describe('long-poll: GET .../jobs/:id?wait=', () => {
  it('answers once the worker finished the job, with the result', async () => {
    const job = await submit('work', 'lp', { hold: 300, tag: 'lp-1' });
    const res = await call('GET', `/v1/queues/work/jobs/${job.id}?wait=20`, ACME);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: job.id, queue: 'work', state: 'completed', attemptsMade: 1, startsAt: job.startsAt, result: { done: 'lp-1' } });
    expect(res.body.finishedAt).toBeDefined();
  });

  it('a job still queued when the wait ends is answered as it is; open waits are counted', async () => {
    const job = await submit('idle', 'lp', { tag: 'never' });
    const res = await call('GET', `/v1/queues/idle/jobs/${job.id}?wait=0.3`, ACME);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: job.id, state: 'queued', attemptsMade: 0, startsAt: job.startsAt });
    // A long wait is open (and counted) until the job goes: cancelled, the answer is 404.
    expect(await waitsOpen('long_poll')).toBe(0);
    const pending = call('GET', `/v1/queues/idle/jobs/${job.id}?wait=25`, ACME);
    await pollUntil(() => waitsOpen('long_poll'), (n) => n === 1, 10_000, 50, 'the long-poll to be counted');
    expect((await call('DELETE', `/v1/queues/idle/jobs/${job.id}`, ACME)).status).toBe(200);
    const answer = await pending;
    expect(answer.status).toBe(404);
    expect(answer.body.code).toBe('SLUICE_ERR_NOT_FOUND');
    expect(await waitsOpen('long_poll')).toBe(0);
  });

  it('another tenant gets 404 at once, no key 401; a wait that is not a number >= 0 is 400 naming `wait`', async () => {
    const job = await submit('idle', 'iso', 1);
    const other = await call('GET', `/v1/queues/idle/jobs/${job.id}?wait=25`, GLOBEX);
    expect(other.status).toBe(404);
    expect(other.body.code).toBe('SLUICE_ERR_NOT_FOUND');
    expect((await call('GET', `/v1/queues/idle/jobs/${job.id}?wait=25`)).status).toBe(401);
    for (const wait of ['soon', '-1', '']) {
      const bad = await call('GET', `/v1/queues/idle/jobs/${job.id}?wait=${wait}`, ACME);
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('SLUICE_ERR_INVALID_REQUEST');
      expect(bad.body.issues.map((i: { path: string }) => i.path)).toEqual(['wait']);
    }
  });
});

describe('SSE: GET .../jobs/:id/events', () => {
  it('streams the state, the transitions with progress, and the final state, then ends', async () => {
    // The lane's second job starts one interval (~1 s) after the first: the stream opens while it is queued.
    await submit('work', 'sse', { tag: 'first' });
    const job = await submit('work', 'sse', { progress: [10, { step: 'two' }], hold: 100, tag: 'second' });
    const res = await fetch(`${serve.url}/v1/queues/work/jobs/${job.id}/events`, { headers: auth(ACME) });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    const events = await readEvents(res);
    // The rate gate may send a job that reached its worker late back once (deferred); the rest is fixed.
    const main = events.filter((e) => e.event !== 'deferred');
    expect(main.map((e) => e.event)).toEqual(['state', 'started', 'progress', 'progress', 'completed', 'state']);
    expect(main[0]!.data).toMatchObject({ id: job.id, queue: 'work', state: 'queued', attemptsMade: 0, startsAt: job.startsAt });
    expect(main[0]!.id).toBeUndefined();
    const at = (e: { data: { at: string } }) => e.data.at;
    expect(main.slice(1, 5).map((e) => ({ ...e.data, at: undefined }))).toEqual([
      { type: 'started', id: job.id, queue: 'work', at: undefined, attemptsMade: 1 },
      { type: 'progress', id: job.id, queue: 'work', at: undefined, progress: 10 },
      { type: 'progress', id: job.id, queue: 'work', at: undefined, progress: { step: 'two' } },
      { type: 'completed', id: job.id, queue: 'work', at: undefined, attemptsMade: 1 },
    ]);
    // Each transition carries its stream id, and its time as ISO.
    for (const e of main.slice(1, 5)) {
      expect(e.id).toMatch(/^\d+-\d+$/);
      expect(new Date(at(e)).toISOString()).toBe(at(e));
      expect(Date.parse(at(e))).toBe(Number(e.id!.split('-')[0]));
    }
    expect(main[5]!.data).toMatchObject({ id: job.id, state: 'completed', attemptsMade: 1, result: { done: 'second' }, progress: { step: 'two' } });
    expect(await waitsOpen('sse')).toBe(0);
  });

  it('a finished job: one state event and the end; another tenant or an unknown job: 404 before any stream', async () => {
    const job = await submit('work', 'sse-done', { tag: 'x' });
    await call('GET', `/v1/queues/work/jobs/${job.id}?wait=20`, ACME);
    const events = await readEvents(await fetch(`${serve.url}/v1/queues/work/jobs/${job.id}/events`, { headers: auth(ACME) }));
    expect(events.map((e) => [e.event, e.data.state])).toEqual([['state', 'completed']]);
    for (const [key, id] of [[GLOBEX, job.id], [ACME, 'jnope']] as const) {
      const res = await fetch(`${serve.url}/v1/queues/work/jobs/${id}/events`, { headers: auth(key) });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(((await res.json()) as { code: string }).code).toBe('SLUICE_ERR_NOT_FOUND');
    }
  });

  it('a cancelled job: the stream sends `cancelled` and ends', async () => {
    const job = await submit('idle', 'sse-cancel', 1);
    const res = await fetch(`${serve.url}/v1/queues/idle/jobs/${job.id}/events`, { headers: auth(ACME) });
    const reading = readEvents(res);
    await pollUntil(() => waitsOpen('sse'), (n) => n === 1, 10_000, 50, 'the stream to be counted');
    expect((await call('DELETE', `/v1/queues/idle/jobs/${job.id}`, ACME)).status).toBe(200);
    const events = await reading;
    expect(events.map((e) => e.event)).toEqual(['state', 'cancelled']);
    expect(events[1]!.data).toMatchObject({ type: 'cancelled', id: job.id, queue: 'idle' });
    await pollUntil(() => waitsOpen('sse'), (n) => n === 0, 10_000, 50, 'the stream to close');
  });

  it('a job gone without its event (removed behind sluice\'s back): the stream ends at the next look, within 5 s', async () => {
    const job = await submit('idle', 'sse-gone', 1);
    const res = await fetch(`${serve.url}/v1/queues/idle/jobs/${job.id}/events`, { headers: auth(ACME) });
    const reading = readEvents(res);
    await pollUntil(() => waitsOpen('sse'), (n) => n === 1, 10_000, 50, 'the stream to be counted');
    // The job's hash and its place in BullMQ's delayed set, deleted directly: no `cancelled` event.
    const raw = new Redis(redis.port, '127.0.0.1');
    try {
      const [, keys] = await raw.scan('0', 'MATCH', `*:bull:idle:${job.id}`, 'COUNT', 10_000);
      expect(keys).toHaveLength(1);
      await raw.del(keys[0]!);
      await raw.zrem(keys[0]!.replace(/[^:]+$/, 'delayed'), job.id);
    } finally {
      raw.disconnect();
    }
    const t0 = performance.now();
    const events = await reading;
    expect(performance.now() - t0).toBeLessThan(FINISH_LOOK_MS + 3_000);
    expect(events.map((e) => e.event)).toEqual(['state']);
    await pollUntil(() => waitsOpen('sse'), (n) => n === 0, 10_000, 50, 'the stream to close');
  });

  it('a burst of progress: a reading client gets the final progress and state; a client that never reads does not stop the others', async () => {
    // 600 progress reports of ~16 KB (~10 MB): more than the socket buffers of a stalled reader hold.
    const job = await submit('work', 'spam', { spam: 600, size: 16_000, tag: 'spam' });
    const url = new URL(`${serve.url}/v1/queues/work/jobs/${job.id}/events`);
    const stalled = connect(Number(url.port), url.hostname);
    stalled.on('error', () => undefined);
    // Never reads: no 'data' listener, so the socket stays paused and the kernel's buffers fill.
    stalled.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${ACME}\r\n\r\n`);
    await pollUntil(() => waitsOpen('sse'), (n) => n === 1, 10_000, 50, 'the stalled stream to be counted');
    const events = await readEvents(await fetch(url, { headers: auth(ACME) }));
    // While a socket is full, a newer progress replaces the older one waiting: what arrives is in order and ends with the last.
    const progress = events.filter((e) => e.event === 'progress').map((e) => e.data.progress.i as number);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(599);
    expect(events.at(-2)!.event).toBe('completed');
    expect(events.at(-1)!.data).toMatchObject({ state: 'completed', result: { done: 'spam' } });
    // The stalled stream is not dropped (that takes 30 s of its socket taking nothing: see
    // test/integration/http/job-events.test.ts); with its progress coalesced it may even have ended
    // normally, its tail in the kernel's buffers.
    expect(sampleValue(await scrape(serve.url), 'sluice_job_event_streams_dropped_total')).toBe(0);
    stalled.destroy();
    await pollUntil(() => waitsOpen('sse'), (n) => n === 0, 10_000, 50, 'the stalled stream to close with its socket');
  });
});

/** A callback receiver on 127.0.0.1: answers each request with the next status of `statuses` (then 200). */
async function receiver(statuses: number[] = []) {
  const got: { headers: IncomingHttpHeaders; body: string; at: number; path: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      got.push({ headers: req.headers, body, at: Date.now(), path: req.url ?? '' });
      const status = statuses.shift() ?? 200;
      if (status === 302) res.writeHead(302, { location: `/elsewhere` }).end();
      else res.writeHead(status).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return { got, url: `http://127.0.0.1:${port}/hook`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('callbacks: submit with callback_url', () => {
  it('POSTs the outcome once completed, signed over timestamp.body; the attempt is on the job', async () => {
    const hook = await receiver();
    const job = await submit('work', 'cb-ok', { tag: 'cb' }, ACME, { callback_url: hook.url });
    await pollUntil(async () => hook.got.length, (n) => n === 1, 20_000, 50, 'the callback');
    const { headers, body, path } = hook.got[0]!;
    expect(path).toBe('/hook');
    expect(headers['content-type']).toBe('application/json');
    expect(headers['sluice-event-id']).toBe(`${job.id}.completed`);
    // The receiver's check, as docs/http-api.md shows it.
    const signature = String(headers['sluice-signature']);
    expect(signature).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(SECRET, body, signature, Math.floor(Date.now() / 1000))).toBe(true);
    expect(verifySignature('another-secret', body, signature, Math.floor(Date.now() / 1000))).toBe(false);
    expect(verifySignature(SECRET, body.replace('"cb"', '"cc"'), signature, Math.floor(Date.now() / 1000))).toBe(false);
    const t = Number(/^t=(\d+)/.exec(signature)![1]);
    expect(verifySignature(SECRET, body, signature, t + 301)).toBe(false);
    const sent = JSON.parse(body) as Record<string, any>;
    expect(sent).toMatchObject({ event: 'job.completed', eventId: `${job.id}.completed`, queue: 'work', job: { id: job.id, state: 'completed', attemptsMade: 1, startsAt: job.startsAt, result: { done: 'cb' } } });
    const status = await pollUntil(() => call('GET', `/v1/queues/work/jobs/${job.id}`, ACME), (r) => r.body.callback?.attempts?.length === 1, 10_000, 50, 'the attempt record');
    expect(status.body.callback).toMatchObject({ url: hook.url, delivered: true, attempts: [{ delivered: true, status: 200 }] });
    await hook.close();
  });

  it('a receiver answering 500 gets retries with backoff, every attempt recorded; a failed job is called back too', async () => {
    const hook = await receiver([500, 500]);
    const job = await submit('work', 'cb-retry', { fail: true }, ACME, { callback_url: hook.url });
    await pollUntil(async () => hook.got.length, (n) => n === 3, 30_000, 50, 'three attempts');
    // Exponential backoff from 1 s: the second attempt >= 1 s after the first, the third >= 2 s after the second.
    expect(hook.got[1]!.at - hook.got[0]!.at).toBeGreaterThanOrEqual(1_000);
    expect(hook.got[2]!.at - hook.got[1]!.at).toBeGreaterThanOrEqual(2_000);
    expect(new Set(hook.got.map((g) => g.body)).size).toBe(1);
    expect(JSON.parse(hook.got[0]!.body)).toMatchObject({ event: 'job.failed', job: { id: job.id, state: 'failed', failedReason: 'asked to fail' } });
    const status = await pollUntil(() => call('GET', `/v1/queues/work/jobs/${job.id}`, ACME), (r) => r.body.callback?.attempts?.length === 3, 10_000, 50, 'three records');
    expect(status.body.state).toBe('failed');
    expect(status.body.callback.delivered).toBe(true);
    expect(status.body.callback.attempts.map((a: { status: number; delivered: boolean; error?: string }) => [a.status, a.delivered, a.error])).toEqual([
      [500, false, 'answered 500'],
      [500, false, 'answered 500'],
      [200, true, undefined],
    ]);
    await hook.close();
  });

  it('a redirect is not followed: the attempt is recorded as not delivered', async () => {
    const hook = await receiver([302]);
    const job = await submit('work', 'cb-redirect', { tag: 'r' }, ACME, { callback_url: hook.url });
    const status = await pollUntil(() => call('GET', `/v1/queues/work/jobs/${job.id}`, ACME), (r) => r.body.callback?.attempts?.length >= 1, 20_000, 50, 'the first attempt');
    expect(status.body.callback.attempts[0]).toMatchObject({ status: 302, delivered: false, error: 'redirect not followed' });
    expect(hook.got.map((g) => g.path)).toEqual(['/hook']);
    await hook.close();
  });

  it('an invalid callback_url is 400 naming the field, and takes no place in the lane', async () => {
    const bad: [string, string][] = [
      ['ftp://127.0.0.1/x', 'must be http or https, not ftp'],
      ['not a url', 'not a URL'],
      ['http://user:pw@127.0.0.1/x', 'must not carry credentials'],
      ['https://evil.example.org/hook', "host 'evil.example.org' is not in the rules' callbacks.allow list"],
      ['http://127.0.0.2:9/hook', "host '127.0.0.2' is not in the rules' callbacks.allow list"],
      ['http://localhost:9/hook', "host 'localhost' is not in the rules' callbacks.allow list"],
    ];
    for (const [url, message] of bad) {
      const res = await call('POST', '/v1/queues/idle/jobs', ACME, { key: 'cb-bad', payload: 1, callback_url: url });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('SLUICE_ERR_INVALID_REQUEST');
      expect(res.body.issues).toEqual([{ path: 'callback_url', message, code: 'custom' }]);
    }
    const ok = await submit('idle', 'cb-bad', 1);
    expect(ok.id).toMatch(/^j/);
    const lane = await call('POST', '/v1/queues/idle/jobs', ACME, { key: 'cb-bad', payload: 2 });
    expect(lane.body.position).toBe(1);
  });
});
