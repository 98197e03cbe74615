// The rules file's response_headers section switches the rate-limit header sets, in the middleware
// and on a queue's 429, without a restart (it is part of the rules in force).
import express from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics, parseRules, type Rules } from '../../../src/index.js';
import { createApp, decisionMiddleware } from '../../../src/express.js';
import { startBackend, type Backend } from '../../helpers/fixtures.js';

const rulesWith = (headers: string) =>
  parseRules(
    `${headers}
domains:
  - domain: api
    descriptors:
      - key: ip
        policy: { algorithm: fixed-window, limit: 1, window: 1m }
http:
  domain: api
  descriptors: [[ip]]
queues:
  - name: q
    rate_per_second: 1
    capacity: 1
    handler: { type: module, path: ./none.mjs }
`,
    { filename: 'rules.yaml' },
  );

let backend: Backend;
let current: Rules;

/** A limited express route and the HTTP service, on a sluice of their own (fresh counters). */
function apps() {
  const sluice = backend.sluice();
  const source = { current: () => current };
  const limited = express();
  limited.use(decisionMiddleware(sluice, { rules: source }));
  limited.get('/', (_req, res) => void res.send('ok'));
  const service = createApp({ sluice, rules: source, metrics: new Metrics(), logger: pino({ level: 'silent' }) });
  return { limited, service };
}

beforeAll(async () => {
  backend = await startBackend('single');
});
afterAll(async () => {
  await backend?.dispose();
});

describe('response_headers', () => {
  it('by default: Retry-After, IETF draft-11 and the legacy fields', async () => {
    current = rulesWith('');
    const { limited } = apps();
    await request(limited).get('/');
    const res = await request(limited).get('/');
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.headers['ratelimit-policy']).toMatch(/^"api\.ip";q=1;w=60$/);
    expect(res.headers['x-ratelimit-limit']).toBe('1');
  });

  it('draft-07 and no legacy fields when the file says so; the queue 429 follows too', async () => {
    current = rulesWith('response_headers: { ietf: draft-07, legacy: false }');
    const { limited, service } = apps();
    await request(limited).get('/');
    const res = await request(limited).get('/');
    expect(res.status).toBe(429);
    expect(res.headers['ratelimit-policy']).toBe('1;w=60');
    expect(res.headers.ratelimit).toMatch(/^limit=1, remaining=0, reset=\d+$/);
    expect(res.headers['x-ratelimit-limit']).toBeUndefined();
    expect(res.headers['retry-after']).toBeDefined();

    await request(service).post('/v1/queues/q/jobs').send({ key: 'k', payload: {} });
    await request(service).post('/v1/queues/q/jobs').send({ key: 'k', payload: {} });
    const full = await request(service).post('/v1/queues/q/jobs').send({ key: 'k', payload: {} });
    expect(full.status).toBe(429);
    expect(full.headers.ratelimit).toMatch(/^limit=1, remaining=0, reset=\d+$/);
    expect(full.headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('every set switched off: a refusal still says when to come back, in the header and the body alike', async () => {
    current = rulesWith('response_headers: { retry_after: false, ietf: none, legacy: false }');
    const { limited, service } = apps();
    const allowed = await request(limited).get('/');
    expect(allowed.status).toBe(200);
    const rateHeaders = (h: Record<string, unknown>) => Object.keys(h).filter((n) => /^(retry-after|ratelimit|x-ratelimit)/.test(n));
    expect(rateHeaders(allowed.headers)).toEqual([]);
    const res = await request(limited).get('/');
    expect(res.status).toBe(429);
    expect(rateHeaders(res.headers)).toEqual(['retry-after']);
    expect(res.body).toEqual({
      error: 'rate_limit_exceeded',
      retry_after: Number(res.headers['retry-after']),
      message: `rate limit exceeded (api.ip); retry in ${res.headers['retry-after']} s`,
    });

    await request(service).post('/v1/queues/q/jobs').send({ key: 'k', payload: {} });
    await request(service).post('/v1/queues/q/jobs').send({ key: 'k', payload: {} });
    const full = await request(service).post('/v1/queues/q/jobs').send({ key: 'k', payload: {} });
    expect(full.status).toBe(429);
    expect(rateHeaders(full.headers)).toEqual(['retry-after']);
    expect(full.body).toEqual({
      error: 'rate_limit_exceeded',
      retry_after: Number(full.headers['retry-after']),
      reason: 'queue_full',
      message: `queue 'q' is full for this key (capacity 1); retry in ${full.headers['retry-after']} s`,
    });
  });

  it('refuses an unknown setting with its line', () => {
    expect(() => rulesWith('response_headers: { ietf: draft-99 }')).toThrow(/rules\.yaml:1:\d+ response_headers\.ietf/);
  });
});
