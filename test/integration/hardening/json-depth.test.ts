// A deeply nested JSON body (2,000 levels in 4 KB) is refused with 400 naming the documented maximum
// depth, on submit and on the decision service, before anything walks it; the maximum is configurable.
// Issue 8, defect 1.
import { pino } from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { Metrics, parseRules } from '../../../src/index.js';
import { createApp } from '../../../src/express.js';
import { checkJsonDepth } from '../../../src/http/body.js';
import { useBackend } from '../../helpers/fixtures.js';

const rules = parseRules(
  `domains:
  - domain: api
    descriptors:
      - key: user
        policy: { algorithm: fixed-window, limit: 10, window: 1m }
queues:
  - name: q
    rate_per_second: 10
    capacity: 10
    handler: { type: module, path: ./none.mjs }
`,
  { filename: 'rules.yaml' },
);
const ctx = useBackend('single');
const logs: string[] = [];
const app = (jsonMaxDepth?: number) =>
  createApp({
    sluice: ctx.sluice,
    rules: { current: () => rules },
    metrics: new Metrics(),
    logger: pino({ level: 'info' }, { write: (line: string) => void logs.push(line) }),
    ...(jsonMaxDepth ? { jsonMaxDepth } : {}),
  });
const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('JSON nesting depth', () => {
  it('2,000 levels: 400 naming the maximum, on submit and on decisions; nothing logged as an error', async () => {
    const service = app();
    const submit = await request(service).post('/v1/queues/q/jobs').set('content-type', 'application/json').send(`{"key":"t","payload":${nested(2_000)}}`);
    expect(submit.status).toBe(400);
    expect(submit.body).toMatchObject({ error: 'invalid_request', code: 'SLUICE_ERR_INVALID_REQUEST' });
    expect(submit.body.message).toMatch(/deeper than 64 levels/);
    const decide = await request(service).post('/v1/decisions').set('content-type', 'application/json').send(`{"domain":"api","descriptors":${nested(2_000)}}`);
    expect(decide.status).toBe(400);
    expect(decide.body.message).toMatch(/deeper than 64 levels/);
    expect(logs.filter((l) => JSON.parse(l).level >= 50)).toEqual([]);
  });

  it('the limit counts levels exactly, ignores brackets inside strings, and is configurable', async () => {
    const body = (depth: number) => `{"key":"t","payload":${nested(depth - 1)}}`; // the outer object is level 1
    expect(() => checkJsonDepth(Buffer.from(body(64)), 64)).not.toThrow();
    expect(() => checkJsonDepth(Buffer.from(body(65)), 64)).toThrow(/deeper than 64/);
    expect(() => checkJsonDepth(Buffer.from(`{"k":"${'['.repeat(500)}\\"[["}`), 2)).not.toThrow();
    const service = app(8);
    expect((await request(service).post('/v1/queues/q/jobs').set('content-type', 'application/json').send(body(8))).status).toBe(202);
    const deep = await request(service).post('/v1/queues/q/jobs').set('content-type', 'application/json').send(body(9));
    expect(deep.status).toBe(400);
    expect(deep.body.message).toMatch(/deeper than 8 levels/);
  });
});
