// e2e (in-process): the decision middleware as a library in an ordinary express app, driven with
// supertest against a private Redis — `decisionMiddleware(sluice, { policy })` and `({ rules })`: exact
// rate-limit headers, the 429 answer, and concurrency leases released when the response ends.
import express, { type Express } from 'express';
import { Redis } from 'ioredis';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics, createSluice, parseRules, type Sluice } from '../../src/index.js';
import { decisionMiddleware } from '../../src/express.js';
import { uniquePrefix } from '../helpers/fixtures.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { pollUntil } from '../helpers/e2e.js';

let redis: RedisServer;
let sluice: Sluice;
let raw: Redis;

beforeAll(async () => {
  redis = await startRedis();
  sluice = createSluice({ redis: redis.url, prefix: uniquePrefix('mw') });
  raw = new Redis(redis.port, '127.0.0.1');
});

afterAll(async () => {
  await sluice?.close();
  raw?.disconnect();
  await redis?.dispose();
});

describe('decisionMiddleware(sluice, { policy })', () => {
  // A token bucket of 2 that refills one token per 1,000 s: nothing refills during the test.
  const policy = { name: 'per-client', algorithm: 'token-bucket', capacity: 2, refillPerSecond: 0.001 } as const;
  let app: Express;

  beforeAll(() => {
    app = express();
    app.use(decisionMiddleware(sluice, { policy, identify: (req) => req.header('x-client') }));
    app.get('/hello', (_req, res) => {
      res.json({ hello: 'world' });
    });
  });

  it('sets the IETF and legacy headers on allowed responses, with the values of a token bucket', async () => {
    const before = Date.now();
    const res = await request(app).get('/hello').set('x-client', 'alice');
    const after = Date.now();
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ hello: 'world' });
    // q = capacity 2, w = 2 / 0.001 = 2,000 s to refill from empty; one token left, the next in 1,000 s.
    expect(res.headers['ratelimit-policy']).toBe('"per-client";q=2;w=2000');
    // t is worked out against the middleware's Date.now(), a few µs after Redis decided: when both fall
    // in the same millisecond, the decision's µs rounding makes the 1,000 s a hair longer, so 1001.
    expect(res.headers['ratelimit']).toMatch(/^"per-client";r=1;t=100[01]$/);
    expect(res.headers['x-ratelimit-limit']).toBe('2');
    expect(res.headers['x-ratelimit-remaining']).toBe('1');
    // Full again when the one missing token is back: 1,000 s from the call, in epoch seconds.
    const reset = Number(res.headers['x-ratelimit-reset']);
    expect(reset).toBeGreaterThanOrEqual(Math.ceil((before + 1_000_000) / 1000) - 1);
    expect(reset).toBeLessThanOrEqual(Math.ceil((after + 1_000_001) / 1000));
    expect(res.headers['retry-after']).toBeUndefined();
  });

  it('answers 429 with Retry-After, headers and the JSON body once the bucket is empty', async () => {
    expect((await request(app).get('/hello').set('x-client', 'alice')).status).toBe(200);
    const res = await request(app).get('/hello').set('x-client', 'alice');
    expect(res.status).toBe(429);
    // The next token is just under 1,000 s away: rounded up, 1000.
    expect(res.headers['retry-after']).toBe('1000');
    expect(res.headers['ratelimit']).toMatch(/^"per-client";r=0;t=100[01]$/);
    expect(res.headers['x-ratelimit-remaining']).toBe('0');
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ error: 'rate_limit_exceeded', retry_after: 1000, message: 'rate limit exceeded (per-client); retry in 1000 s' });
  });

  it('keys by identify(): another client has its own bucket; no key means no limit', async () => {
    const bob = await request(app).get('/hello').set('x-client', 'bob');
    expect(bob.status).toBe(200);
    expect(bob.headers['x-ratelimit-remaining']).toBe('1');
    const anonymous = await request(app).get('/hello');
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers['ratelimit']).toBeUndefined();
  });

  it('a sensitive key (an API key) is hashed before it reaches Redis', async () => {
    const secretApp = express();
    secretApp.use(decisionMiddleware(sluice, { policy: { ...policy, name: 'per-api-key' }, identify: (req) => req.header('x-api-key'), sensitiveKey: true }));
    secretApp.get('/hello', (_req, res) => res.json({}));
    const apiKey = 'sk_live_middlewareSecret42';
    expect((await request(secretApp).get('/hello').set('x-api-key', apiKey)).status).toBe(200);
    const keys = await raw.keys('*per-api-key*');
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toContain(apiKey);
  });
});

describe('decisionMiddleware(sluice, { rules })', () => {
  const RULES = `domains:
  - domain: web
    descriptors:
      - key: route
        value: export
        descriptors:
          - key: ip
            name: export-concurrency
            policy: { algorithm: concurrency, limit: 1, lease: 1m }
            # These tests are about leases: a decision past the default 200 ms deadline on a loaded CI
            # machine would fail open (no lease) and let the second request into the handler, where it waits.
            timeout: 10s
      - key: route
        value: search
        descriptors:
          - key: ip
            name: search-per-ip
            policy: { algorithm: sliding-log, limit: 3, window: 1h }
      - key: global
        name: global-trial
        policy: { algorithm: sliding-log, limit: 1, window: 1h }
        shadow_mode: true
route_groups:
  export: { paths: ["/v1/export"], methods: [POST] }
  search: ["/v1/search", "/v1/search/**"]
http:
  domain: web
  descriptors:
    - [route, ip]
    - [{ key: global, value: all }]
`;
  let app: Express;
  let metrics: Metrics;
  let release: (() => void) | undefined;
  let entered: (() => void) | undefined;

  beforeAll(() => {
    metrics = new Metrics();
    app = express();
    app.use(decisionMiddleware(sluice, { rules: parseRules(RULES, { filename: 'middleware-rules.yaml' }), metrics }));
    app.post('/v1/export', async (_req, res) => {
      entered?.();
      await new Promise<void>((r) => (release = r));
      res.json({ exported: true });
    });
    // Every other path answers 200, so that the aliases express itself would not route still reach a handler.
    app.use((req, res) => {
      res.json({ path: req.path });
    });
  });

  it('route aliases count as one route; an enforcing rule refuses, the shadow rule never does', async () => {
    const paths = ['/v1/search', '/v1/Search/', '/v1//search?q=1'];
    const remaining: string[] = [];
    for (const p of paths) {
      const res = await request(app).get(p);
      expect(res.status).toBe(200);
      remaining.push(String(res.headers['x-ratelimit-remaining']));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const refused = await request(app).get('/v1/search/deep/path');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'rate_limit_exceeded', message: expect.stringContaining('(search-per-ip)') });
    // Headers describe enforcing rules only: the shadow rule is not in them.
    expect(refused.headers['ratelimit-policy']).toBe('"search-per-ip";q=3;w=3600');
    // Counted: the shadow rule allowed the first call and would have refused the other three.
    const text = await metrics.text();
    expect(text).toContain('sluice_decisions_total{rule="global-trial",outcome="shadow-refused"} 3');
    expect(text).toContain('sluice_decisions_total{rule="search-per-ip",outcome="refused"} 1');
  });

  it('X-Forwarded-For from an untrusted peer does not move a request to another counter', async () => {
    const res = await request(app).get('/v1/search').set('x-forwarded-for', '1.2.3.4');
    expect(res.status).toBe(429);
  });

  it('a concurrency lease is held while the response is in flight and released when it ends', async () => {
    const inHandler = new Promise<void>((r) => (entered = r));
    const first = request(app).post('/v1/export').then((r) => r);
    await inHandler;

    const second = await request(app).post('/v1/export');
    expect(second.status).toBe(429);
    expect(second.headers['ratelimit-policy']).toBe('"export-concurrency";q=1;qu="concurrent-requests"');
    expect(second.headers['ratelimit']).toBe('"export-concurrency";r=0');
    expect(second.headers['x-ratelimit-limit']).toBe('1');
    expect(second.headers['x-ratelimit-remaining']).toBe('0');
    // A concurrency refusal's wait is the lease's expiry at most: an upper bound, rounded up.
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(59);
    expect(Number(second.headers['retry-after'])).toBeLessThanOrEqual(60);

    release!();
    const done = await first;
    expect(done.status).toBe(200);
    expect(done.headers['x-ratelimit-remaining']).toBe('0');
    // The lease goes back when the response ends (asynchronously, on 'close'): the next call gets it.
    entered = undefined;
    const third = await pollUntil(
      async () => {
        const p = request(app).post('/v1/export').then((r) => r);
        // Let a request that got through finish: keep releasing until it is answered (one release 10 ms
        // after the send could come before a loaded machine's request reached the handler, which then
        // waited forever, holding the lease for its 1 min and failing this test's retries too).
        const timer = setInterval(() => release?.(), 10);
        return p.finally(() => clearInterval(timer));
      },
      (r) => r.status === 200,
      3000,
      20,
      'the lease to be released',
    );
    expect(third.body).toEqual({ exported: true });
  });

  it('a lease is released when the client goes away before the response', async () => {
    const inHandler = new Promise<void>((r) => (entered = r));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    const port = (server.address() as { port: number }).port;
    const abort = new AbortController();
    const pending = fetch(`http://127.0.0.1:${port}/v1/export`, { method: 'POST', signal: abort.signal }).catch((e: Error) => e.name);
    await inHandler;
    expect((await request(app).post('/v1/export')).status).toBe(429);
    abort.abort();
    expect(await pending).toBe('AbortError');
    entered = undefined;
    const next = await pollUntil(
      async () => {
        const p = request(app).post('/v1/export').then((r) => r);
        // Keep releasing until the request is answered: on a loaded machine it may reach the handler late.
        const timer = setInterval(() => release?.(), 10);
        return p.finally(() => clearInterval(timer));
      },
      (r) => r.status === 200,
      3000,
      20,
      'the aborted lease to be released',
    );
    expect(next.status).toBe(200);
    release?.();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
});
