// The decision service's concurrency leases, in-process (createApp + supertest on a real Redis): a
// lease taken by POST /v1/decisions is given back by POST /v1/decisions/release, and no descriptor
// value reaches a Redis key.
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics, parseRules } from '../../../src/index.js';
import { createApp } from '../../../src/express.js';
import { startBackend, type Backend } from '../../helpers/fixtures.js';

const RULES = `domains:
  - domain: svc
    descriptors:
      - key: export
        policy: { algorithm: concurrency, limit: 1, lease: 30s }
      - key: api_key
        rate_limit: { unit: minute, requests_per_unit: 100 }
`;

let backend: Backend;
let app: ReturnType<typeof createApp>;
let prefix: string;

beforeAll(async () => {
  backend = await startBackend('single');
  const sluice = backend.sluice();
  prefix = sluice.keys.prefix;
  const rules = parseRules(RULES, { filename: 'rules.yaml' });
  app = createApp({ sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }) });
});
afterAll(async () => {
  await backend?.dispose();
});

const decide = (descriptors: object[]) => request(app).post('/v1/decisions').send({ domain: 'svc', descriptors });

describe('POST /v1/decisions/release', () => {
  it('gives a concurrency lease back', async () => {
    const first = await decide([{ key: 'export', value: 'u1' }]);
    expect(first.body).toMatchObject({ allowed: true, statuses: [{ code: 'OK', rule: 'svc.export' }] });
    const leaseId = first.body.statuses[0].lease_id as string;
    expect(leaseId).toBeTruthy();
    expect((await decide([{ key: 'export', value: 'u1' }])).body).toMatchObject({ allowed: false, statuses: [{ code: 'OVER_LIMIT' }] });

    const released = await request(app).post('/v1/decisions/release').send({ domain: 'svc', descriptor: { key: 'export', value: 'u1' }, lease_id: leaseId });
    expect(released.status).toBe(200);
    expect(released.body).toEqual({ released: true, rule: 'svc.export' });
    const again = await request(app).post('/v1/decisions/release').send({ domain: 'svc', descriptor: { key: 'export', value: 'u1' }, lease_id: leaseId });
    expect(again.body).toEqual({ released: false, rule: 'svc.export' });
    expect((await decide([{ key: 'export', value: 'u1' }])).body).toMatchObject({ allowed: true });
  });

  it('answers 404 for a descriptor without a concurrency rule, 400 for a bad body', async () => {
    const wrong = await request(app).post('/v1/decisions/release').send({ domain: 'svc', descriptor: { key: 'api_key', value: 'k' }, lease_id: 'x' });
    expect(wrong.status).toBe(404);
    expect(wrong.body).toMatchObject({ error: 'not_found', code: 'SLUICE_ERR_NOT_FOUND' });
    const bad = await request(app).post('/v1/decisions/release').send({ domain: 'svc', descriptor: { key: 'export', value: 'u1' } });
    expect(bad.status).toBe(400);
    expect(bad.body.issues.map((i: { path: string }) => i.path)).toEqual(['lease_id']);
  });

  it('never puts a descriptor value into a Redis key', async () => {
    const secret = 'sk_live_not_in_redis';
    expect((await decide([{ key: 'api_key', value: secret }])).body).toMatchObject({ allowed: true });
    const keys = await backend.raw.keys(`${prefix}:*`);
    expect(keys.length).toBeGreaterThan(0);
    for (const k of keys) expect(k).not.toContain(secret);
  });
});
