// What docs/http-api.md and operations.md say of job status reads while Redis is unavailable: a 503
// (SLUICE_ERR_REDIS_UNAVAILABLE) within the throttle's 2 s deadline, never a request left hanging.
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/express.js';
import { Metrics, createSluice, parseRules } from '../../../src/index.js';

// Port 1: nothing listens, so the client never becomes ready.
const sluice = createSluice({ redis: 'redis://127.0.0.1:1' });
afterAll(() => sluice.close());
const rules = parseRules(`queues:
  - name: orders
    rate_per_second: 1
    capacity: 5
    handler: { type: http, url: "http://127.0.0.1:9/x" }
`);

describe('GET /v1/queues/{queue}/jobs/{id} without Redis', () => {
  it('answers 503 SLUICE_ERR_REDIS_UNAVAILABLE within the 2 s deadline', async () => {
    const app = createApp({ sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }) });
    const started = Date.now();
    const res = await request(app).get('/v1/queues/orders/jobs/j1');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ error: 'service_unavailable', code: 'SLUICE_ERR_REDIS_UNAVAILABLE' });
    // The deadline is 2 s; the rest is slack for a loaded machine, far below "no deadline".
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
