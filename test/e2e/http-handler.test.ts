// e2e: the shipped `http` handler in `sluice worker`, against a mock upstream on 127.0.0.1 that counts
// calls and answers by script: the upstream's status and body become the result; 429/503 with
// Retry-After (seconds or HTTP-date) defer the job and hold its lane without using an attempt; 500 is
// retried with the queue's backoff; header values come from environment variables only.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { pollUntil, postJson, startSluice, stopAll, tempDir, waitForJob, type JobView, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

/** One call the mock received. */
interface Call {
  at: number;
  method: string;
  headers: IncomingHttpHeaders;
  body: { scenario: string; n?: number };
}

/** What the mock answers: a status, headers and a body (JSON when an object). */
interface Answer {
  status: number;
  /** Answer this late (to trip the handler's timeout). */
  delayMs?: number;
  headers?: Record<string, string>;
  body?: unknown;
}

/**
 * The mock upstream: each job's payload names a scenario; the k-th call of a scenario gets the k-th
 * scripted answer (the last one repeats). Calls without the expected Authorization get 401.
 */
class MockUpstream {
  readonly calls: Call[] = [];
  private readonly scripts = new Map<string, (call: Call) => Answer>();
  private server!: Server;
  url = '';

  constructor(private readonly token: string) {}

  script(scenario: string, answers: (Answer | ((call: Call) => Answer))[]): void {
    this.scripts.set(scenario, (call) => {
      const k = this.callsOf(scenario).indexOf(call);
      const a = answers[Math.min(k, answers.length - 1)]!;
      return typeof a === 'function' ? a(call) : a;
    });
  }

  callsOf(scenario: string): Call[] {
    return this.calls.filter((c) => c.body.scenario === scenario);
  }

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const call: Call = { at: Date.now(), method: req.method!, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') as Call['body'] };
        this.calls.push(call);
        const answer: Answer =
          req.headers.authorization !== this.token
            ? { status: 401, body: { error: 'bad token' } }
            : (this.scripts.get(call.body.scenario)?.(call) ?? { status: 200, body: { ok: true, echo: call.body } });
        const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body ?? null);
        if (answer.delayMs) {
          setTimeout(() => {
            if (res.destroyed) return;
            res.writeHead(answer.status, { 'content-type': 'application/json' });
            res.end(text);
          }, answer.delayMs);
          return;
        }
        res.writeHead(answer.status, {
          'content-type': typeof answer.body === 'string' ? 'text/plain' : 'application/json',
          ...answer.headers,
        });
        res.end(text);
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    const a = this.server.address();
    this.url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}/v1/charge`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

const TOKEN = `Bearer e2e-${randomBytes(12).toString('hex')}`;
const BACKOFF_MS = 300;
/** How late the mock upstream may record a call after the worker sent it (a busy test process). */
const RECORD_SLACK_MS = 30;
let slowTries = 0;

let redis: RedisServer;
let dir: TempDir;
let upstream: MockUpstream;
let serve: SluiceProcess;
let worker: SluiceProcess;
let rulesFile: string;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('http-handler');
  upstream = new MockUpstream(TOKEN);
  await upstream.start();
  rulesFile = dir.write(
    'rules.yaml',
    `auth: none
queues:
  - name: charges
    rate_per_second: 20
    capacity: 20
    attempts: 3
    backoff: { type: exponential, delay: ${BACKOFF_MS}ms }
    handler:
      type: http
      url: ${upstream.url}
      timeout: 2s
      headers:
        Authorization: { env: E2E_UPSTREAM_TOKEN }
        Accept: application/json
  - name: impatient
    rate_per_second: 20
    capacity: 20
    attempts: 2
    backoff: { type: fixed, delay: ${BACKOFF_MS}ms }
    handler:
      type: http
      url: ${upstream.url}
      timeout: 300ms
      headers:
        Authorization: { env: E2E_UPSTREAM_TOKEN }
  - name: nowhere
    rate_per_second: 20
    capacity: 20
    attempts: 2
    backoff: { type: fixed, delay: ${BACKOFF_MS}ms }
    handler:
      type: http
      url: http://127.0.0.1:${await closedPort()}/v1/charge
      headers:
        Authorization: { env: E2E_UPSTREAM_TOKEN }
`,
  );
  [serve, worker] = await Promise.all([
    startSluice('serve', { config: rulesFile, redisUrl: redis.url }),
    startSluice('worker', { config: rulesFile, redisUrl: redis.url, env: { E2E_UPSTREAM_TOKEN: TOKEN } }),
  ]);
});

afterAll(async () => {
  await stopAll(serve, worker);
  await upstream?.close();
  await redis?.dispose();
  dir?.dispose();
});

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

async function submit(key: string, payload: Call['body'], queue = 'charges'): Promise<string> {
  const res = await postJson(`${serve.url}/v1/queues/${queue}/jobs`, { key, payload });
  expect(res.status).toBe(202);
  return res.headers.get('location')!;
}

let attempt = 0;

describe('the http handler', () => {
  it('the job result is the upstream status and JSON body; the token comes from the environment', async () => {
    upstream.script('ok', [{ status: 201, body: { charged: 1250, currency: 'EUR' } }]);
    const location = await submit('acct-1', { scenario: 'ok', n: 1 });
    const job = await waitForJob(serve.url, location);
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 1, result: { status: 201, body: { charged: 1250, currency: 'EUR' }, contentType: 'application/json' } });
    const [call, ...more] = upstream.callsOf('ok');
    expect(more).toEqual([]);
    expect(call!.method).toBe('POST');
    expect(call!.body).toEqual({ scenario: 'ok', n: 1 });
    expect(call!.headers.authorization).toBe(TOKEN);
    expect(call!.headers.accept).toBe('application/json');
    expect(call!.headers['content-type']).toBe('application/json');
    expect(call!.headers['idempotency-key']).toBe(job.id);
    // The secret lives only in the worker's environment: not in the file, not in any log line.
    expect(readFileSync(rulesFile, 'utf8')).not.toContain(TOKEN.slice(7));
    for (const p of [serve, worker]) expect(JSON.stringify(p.logs) + p.stderr()).not.toContain(TOKEN.slice(7));
  });

  it('a 4xx answer (not 429) is a result, not a failure: text body kept as text, no retry', async () => {
    upstream.script('declined', [{ status: 402, body: 'card declined' }]);
    const job = await waitForJob(serve.url, await submit('acct-2', { scenario: 'declined' }));
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 1, result: { status: 402, body: 'card declined', contentType: 'text/plain' } });
    expect(upstream.callsOf('declined')).toHaveLength(1);
  });

  it('429 with Retry-After: 2 defers the job 2 s without using an attempt, and holds its lane (not other lanes)', async () => {
    // Names unique to this attempt: a retry must not see the calls or the lane pause of an earlier one.
    const n = attempt++;
    const [busy, behindName, otherName, key] = [`busy-${n}`, `queued-behind-${n}`, `other-lane-${n}`, `acct-3-${n}`];
    upstream.script(busy, [{ status: 429, headers: { 'retry-after': '2' }, body: { error: 'slow down' } }, { status: 200, body: { ok: 'after wait' } }]);
    const deferred = await submit(key, { scenario: busy });
    await pollUntil(async () => upstream.callsOf(busy).length, (n) => n >= 1, 10_000, 20, 'the first upstream call');
    const firstAt = upstream.callsOf(busy)[0]!.at;
    // Behind it in the same lane: waits for the pause. Another key's lane: runs now.
    const sameLane = await submit(key, { scenario: behindName });
    const otherLane = await submit(`acct-4-${n}`, { scenario: otherName });

    const other = await waitForJob(serve.url, otherLane);
    expect(other.state).toBe('completed');
    expect(upstream.callsOf(otherName)[0]!.at - firstAt).toBeLessThan(1500);

    const job = await waitForJob(serve.url, deferred);
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 1, result: { status: 200, body: { ok: 'after wait' } } });
    const calls = upstream.callsOf(busy);
    expect(calls).toHaveLength(2);
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(2000);
    expect(calls[1]!.at - calls[0]!.at).toBeLessThan(2000 + 1500);

    const behind = await waitForJob(serve.url, sameLane);
    expect(behind.state).toBe('completed');
    // After the pause, and after the deferred job (FIFO: it was first).
    expect(upstream.callsOf(behindName)[0]!.at - firstAt).toBeGreaterThanOrEqual(2000);
    expect(upstream.callsOf(behindName)[0]!.at).toBeGreaterThanOrEqual(calls[1]!.at);
  });

  it('503 with an HTTP-date Retry-After defers until that instant, without using an attempt', async () => {
    let until = 0;
    upstream.script('maintenance', [
      () => {
        // An HTTP-date has whole seconds: 3 s ahead, truncated, is 2 to 3 s away.
        const date = new Date(Date.now() + 3000).toUTCString();
        until = Date.parse(date);
        return { status: 503, headers: { 'retry-after': date }, body: { error: 'maintenance' } };
      },
      { status: 200, body: { ok: 'back' } },
    ]);
    const job = await waitForJob(serve.url, await submit('acct-5', { scenario: 'maintenance' }));
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 1, result: { status: 200, body: { ok: 'back' } } });
    const calls = upstream.callsOf('maintenance');
    expect(calls).toHaveLength(2);
    expect(calls[1]!.at).toBeGreaterThanOrEqual(until);
    expect(calls[1]!.at).toBeLessThan(until + 1500);
  });

  it('500 is retried with exponential backoff (300 ms, then 600 ms); attempts count', async () => {
    upstream.script('flaky', [{ status: 500, body: { error: 'boom' } }, { status: 500, body: { error: 'boom' } }, { status: 200, body: { ok: 'third time' } }]);
    const job = await waitForJob(serve.url, await submit('acct-6', { scenario: 'flaky' }));
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 3, result: { status: 200, body: { ok: 'third time' } } });
    const at = upstream.callsOf('flaky').map((c) => c.at);
    expect(at).toHaveLength(3);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(BACKOFF_MS);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(2 * BACKOFF_MS);
  });

  it('a 500 on every attempt fails the job after 3 attempts with the upstream status as the reason', async () => {
    upstream.script('down', [{ status: 500, body: { error: 'down' } }]);
    const job: JobView = await waitForJob(serve.url, await submit('acct-7', { scenario: 'down' }));
    expect(job).toMatchObject({ state: 'failed', attemptsMade: 3, failedReason: 'upstream answered 500' });
    expect(job.result).toBeUndefined();
    expect(upstream.callsOf('down')).toHaveLength(3);
  });

  it('a 429 without Retry-After is an ordinary failure: retried with backoff, using attempts', async () => {
    upstream.script('bare-429', [{ status: 429, body: { error: 'no hint' } }, { status: 200, body: { ok: 1 } }]);
    const job = await waitForJob(serve.url, await submit('acct-8', { scenario: 'bare-429' }));
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 2, result: { status: 200, body: { ok: 1 } } });
    const at = upstream.callsOf('bare-429').map((c) => c.at);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(BACKOFF_MS);
  });

  it('an upstream slower than the timeout is retried like a 5xx; the in-time answer is the result', async () => {
    // A scenario of its own on each try (the test project retries): its calls are counted from zero.
    const scenario = `slow-${slowTries++}`;
    upstream.script(scenario, [{ status: 200, delayMs: 1000, body: { ok: 'too late' } }, { status: 200, body: { ok: 'in time' } }]);
    const job = await waitForJob(serve.url, await submit(`acct-9-${scenario}`, { scenario }, 'impatient'));
    expect(job).toMatchObject({ state: 'completed', attemptsMade: 2, result: { status: 200, body: { ok: 'in time' } } });
    const at = upstream.callsOf(scenario).map((c) => c.at);
    expect(at).toHaveLength(2);
    // The timeout and the backoff run from the worker's send; the mock records a call once its body
    // has arrived here, which a busy test process can do some ms after the send: the first call's
    // record may be that much late, so the gap between the records may be short of 600 ms by it.
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(300 + BACKOFF_MS - RECORD_SLACK_MS);
  });

  it('an unreachable upstream fails the job after its attempts, saying so', async () => {
    const job = await waitForJob(serve.url, await submit('acct-10', { scenario: 'nowhere' }, 'nowhere'));
    expect(job).toMatchObject({ state: 'failed', attemptsMade: 2 });
    expect(job.failedReason).toMatch(/^upstream unreachable: /);
  });

  it('a worker whose header variable is unset refuses to start: exit 1 naming the variable, nothing left running', async () => {
    const other = dir.write('rules-missing-env.yaml', readFileSync(rulesFile, 'utf8').replace('E2E_UPSTREAM_TOKEN', 'E2E_UNSET_TOKEN_VARIABLE'));
    const error = await startSluice('worker', { config: other, redisUrl: redis.url, readyTimeoutMs: 15_000 }).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(error?.message).toMatch(/^sluice worker exited \(1\) before the 'workers_ready' line/);
    expect(error?.message).toContain('environment variable E2E_UNSET_TOKEN_VARIABLE (header Authorization) is not set');
  });
});
