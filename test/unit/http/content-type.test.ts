// What docs/http-api.md says of bodies: every POST route refuses a body that is not application/json
// with 415 before reading it, an empty or missing Content-Type included.
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/express.js';
import { Metrics, createSluice, parseRules } from '../../../src/index.js';

// The 415 comes before any Redis call: a client that never connects is enough.
const sluice = createSluice({ redis: 'redis://127.0.0.1:1' });
const rules = parseRules(`domains:
  - domain: svc
    descriptors:
      - key: user
        rate_limit: { unit: minute, requests_per_unit: 5 }
queues:
  - name: orders
    rate_per_second: 1
    capacity: 5
    handler: { type: http, url: "http://127.0.0.1:9/x" }
`);
let server: ReturnType<ReturnType<typeof createApp>['listen']>;
let port: number;

beforeAll(async () => {
  const app = createApp({ sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }) });
  server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await sluice.close();
});

/** A raw POST: node:http sends an empty Content-Type as given (fetch would drop it). */
function post(path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: { code?: string } }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as { code?: string } }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('POST bodies that are not application/json', () => {
  const routes = ['/v1/queues/orders/jobs', '/v1/decisions', '/v1/decisions/release'];
  it.each(routes)('%s: empty, missing and text/plain content types are 415', async (path) => {
    const json = '{"domain":"svc"}';
    for (const headers of [{ 'content-type': '' }, {}, { 'content-type': 'text/plain' }] as Record<string, string>[]) {
      const res = await post(path, headers, json);
      expect(res.status, JSON.stringify(headers)).toBe(415);
      expect(res.body.code).toBe('SLUICE_ERR_UNSUPPORTED_MEDIA_TYPE');
    }
    // The same body as JSON passes the content-type check (it fails its schema instead: 400).
    expect((await post(path, { 'content-type': 'application/json; charset=utf-8' }, json)).status).toBe(400);
  });
});
