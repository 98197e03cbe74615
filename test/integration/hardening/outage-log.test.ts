// A Redis outage seen by the HTTP service is logged as two lines — `redis_down` at the first 503,
// `redis_up` (with the count of failed requests and the duration) at the first answer after — not one
// error line with a stack per request; per-request detail is at debug. Issue 8, defect 5.
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics, parseRules } from '../../../src/index.js';
import { createApp } from '../../../src/express.js';
import { startBackend, type Backend } from '../../helpers/fixtures.js';

const rules = parseRules(
  `queues:
  - name: q
    rate_per_second: 1000
    capacity: 1000
    handler: { type: module, path: ./none.mjs }
`,
  { filename: 'rules.yaml' },
);

let backend: Backend;
beforeAll(async () => {
  backend = await startBackend('single');
});
afterAll(async () => {
  await backend?.dispose();
});

interface Line {
  level: number;
  event?: string;
  msg: string;
  failedRequests?: number;
  downMs?: number;
}

describe('outage logging', () => {
  it('N submits answered 503 while Redis is down: one redis_down, one redis_up with the count, detail at debug', async () => {
    const lines: Line[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Line) });
    const app = createApp({ sluice: backend.sluice(), rules: { current: () => rules }, metrics: new Metrics(), logger });
    const submit = (i: number) => request(app).post('/v1/queues/q/jobs').send({ key: `k${i}`, payload: {} });

    expect((await submit(0)).status).toBe(202);
    await backend.server!.stop();
    const N = 25;
    for (let i = 0; i < N; i++) expect((await submit(i)).status).toBe(503);
    // Job status needs Redis too: its 503s are part of the same outage.
    expect((await request(app).get('/v1/queues/q/jobs/some-id')).status).toBe(503);

    await backend.server!.start();
    // The client reconnects on its own within ~0.5 s; submits in that window may still fail (counted).
    let extraFailures = 0;
    for (let i = 0; ; i++) {
      const res = await submit(1000 + i);
      if (res.status === 202) break;
      expect(res.status).toBe(503);
      extraFailures++;
      if (i > 200) throw new Error('Redis did not come back');
      await new Promise((r) => setTimeout(r, 25));
    }
    expect((await submit(2000)).status).toBe(202);

    const events = (e: string) => lines.filter((l) => l.event === e);
    expect(events('redis_down')).toHaveLength(1);
    expect(events('redis_down')[0]!.level).toBe(50);
    expect(events('redis_up')).toHaveLength(1);
    expect(events('redis_up')[0]!.failedRequests).toBe(N + 1 + extraFailures);
    expect(events('redis_up')[0]!.downMs).toBeGreaterThan(0);
    expect(events('redis_request_failed')).toHaveLength(N + 1 + extraFailures);
    expect(events('redis_request_failed').every((l) => l.level === 20)).toBe(true);
    // Nothing else at error level: no per-request "request failed" line.
    expect(lines.filter((l) => l.level >= 50)).toHaveLength(1);
  });
});
