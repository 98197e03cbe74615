// The dashboard's server side in-process (real Redis): /ui's login form and session cookie, the
// cookie accepted by the admin API (changes only with X-Sluice-UI), the lane id of a key, the live
// figures stream, and its bound on a client that does not read.
import { createHash } from 'node:crypto';
import type { Server } from 'node:http';
import { pino } from 'pino';
import request from 'supertest';
import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics, parseRules } from '../../../src/index.js';
import { createApp } from '../../../src/express.js';
import { adminContext } from '../../../src/http/admin/context.js';
import type { AppDeps } from '../../../src/http/deps.js';
import { QueueThrottles } from '../../../src/http/queue-throttles.js';
import { FigureStream, STREAM_BUFFER_BYTES, STREAM_MAX_SKIPS } from '../../../src/http/admin/stream-routes.js';
import { useBackend } from '../../helpers/fixtures.js';

const TOKEN = 'dashboard-routes-admin-token-01';
const ctx = useBackend('single');
let app: Express;
let deps: AppDeps;
let server: Server;
let url: string;

beforeAll(async () => {
  const rules = parseRules(
    `auth: none
queues:
  - name: orders
    rate_per_second: 0.01
    capacity: 10
    key: body
    handler: { type: module, path: ./none.mjs }
`,
    { filename: 'rules.yaml' },
  );
  deps = { sluice: ctx.sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }), adminToken: TOKEN };
  app = createApp(deps);
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const a = server.address();
  url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
});
afterAll(() => {
  (app.locals.closeStreams as () => void)();
  server?.close();
});

async function login(): Promise<string> {
  const res = await request(app).post('/ui/login').type('form').send({ token: TOKEN });
  expect(res.status).toBe(303);
  expect(res.headers.location).toBe('/ui');
  const cookie = String(res.headers['set-cookie']);
  expect(cookie).toMatch(/^sluice_ui=v1\.\d+\.[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=43200$/);
  return cookie.split(';')[0]!;
}

describe('/ui login', () => {
  it('answers a wrong token with 401 and the form with an error, and sets no cookie', async () => {
    const res = await request(app).post('/ui/login').type('form').send({ token: 'wrong' });
    expect(res.status).toBe(401);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.text).toContain('<p class="error" role="alert" id="login-error">That is not the admin token.</p>');
  });

  it('refuses the right token posted from another site', async () => {
    const cross = await request(app).post('/ui/login').set('Sec-Fetch-Site', 'cross-site').type('form').send({ token: TOKEN });
    expect(cross.status).toBe(401);
    const origin = await request(app).post('/ui/login').set('Origin', 'https://evil.example').type('form').send({ token: TOKEN });
    expect(origin.status).toBe(401);
    expect(origin.headers['set-cookie']).toBeUndefined();
  });

  it('serves the login form without a session and the app with one; the bundle from the package', async () => {
    const anon = await request(app).get('/ui');
    expect(anon.status).toBe(200);
    expect(anon.text).toContain('<form method="post" action="/ui/login">');
    expect(anon.headers['content-security-policy']).toContain("default-src 'self'");
    const cookie = await login();
    const signed = await request(app).get('/ui').set('Cookie', cookie);
    expect(signed.text).toContain('<script type="module" src="/ui/assets/app.js"></script>');
    const js = await request(app).get('/ui/assets/app.js');
    expect([js.status, js.headers['content-type']]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect((await request(app).get('/ui/assets/nothing.js')).status).toBe(404);
    const out = await request(app).post('/ui/logout').set('Cookie', cookie);
    expect([out.status, String(out.headers['set-cookie'])]).toEqual([303, 'sluice_ui=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0']);
  });
});

describe('the admin API with the session cookie', () => {
  it('reads with the cookie; changes only with X-Sluice-UI: 1', async () => {
    const cookie = await login();
    expect((await request(app).get('/v1/admin/queues').set('Cookie', cookie)).status).toBe(200);
    const bare = await request(app).post('/v1/admin/queues/orders/drain').set('Cookie', cookie);
    expect(bare.status).toBe(401);
    expect(bare.body.message).toBe('a change made with the dashboard session needs the X-Sluice-UI: 1 header');
    expect((await request(app).post('/v1/admin/queues/orders/undrain').set('Cookie', cookie).set('X-Sluice-UI', '1')).status).toBe(200);
    expect((await request(app).get('/v1/admin/queues').set('Cookie', 'sluice_ui=v1.99999999999999.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA')).status).toBe(401);
  });
});

describe('POST /v1/admin/queues/:queue/lane-id', () => {
  it('gives the lane id a submit stores: the key when safe, else its hash', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const safe = await request(app).post('/v1/admin/queues/orders/lane-id').set(auth).send({ key: 'acme' });
    expect(safe.body).toEqual({ queue: 'orders', lane: 'acme' });
    const key = 'user:42';
    const hashed = await request(app).post('/v1/admin/queues/orders/lane-id').set(auth).send({ key });
    expect(hashed.body).toEqual({ queue: 'orders', lane: `#${createHash('sha256').update(key).digest('base64url').slice(0, 22)}` });
    // The same id the submit used: the lane page finds the job there.
    expect((await request(app).post('/v1/queues/orders/jobs').send({ key, payload: 1 })).status).toBe(202);
    expect((await request(app).post('/v1/queues/orders/jobs').send({ key, payload: 2 })).status).toBe(202);
    const lane = await request(app).get(`/v1/admin/queues/orders/lanes/${encodeURIComponent(hashed.body.lane)}`).set(auth);
    expect([lane.status, lane.body.jobs]).toEqual([200, 2]);
    const bad = await request(app).post('/v1/admin/queues/orders/lane-id').set(auth).send({});
    expect([bad.status, bad.body.issues[0].path]).toEqual([400, 'key']);
  });
});

describe('GET /v1/admin/stream', () => {
  it('sends the overview GET /v1/admin/queues answers, as figures events', async () => {
    expect((await fetch(`${url}/v1/admin/stream`)).status).toBe(401);
    const ac = new AbortController();
    const res = await fetch(`${url}/v1/admin/stream`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: ac.signal });
    expect([res.status, res.headers.get('content-type')]).toEqual([200, 'text/event-stream; charset=utf-8']);
    const reader = res.body!.getReader();
    let text = '';
    while (!/event: figures\nid: \d+\ndata: .*\n\n/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    ac.abort();
    expect(text.startsWith('retry: 2000\n\n')).toBe(true);
    const data = JSON.parse(/data: (.*)\n/.exec(text)![1]!);
    const api = (await request(app).get('/v1/admin/queues').set({ authorization: `Bearer ${TOKEN}` })).body;
    expect(Object.keys(data).sort()).toEqual(['at', 'queues']);
    expect(data.queues.map((q: any) => [q.name, q.config, q.live.queued, q.live.busyLanes])).toEqual(api.queues.map((q: any) => [q.name, q.config, q.live.queued, q.live.busyLanes]));
  });

  it('skips frames for a client whose buffer is full, and closes it after STREAM_MAX_SKIPS in a row', async () => {
    // A response whose socket never drains: what a client that does not read looks like to the server.
    const stream = new FigureStream(adminContext(deps, new QueueThrottles(ctx.sluice)), 10);
    let destroyed = false;
    const written: string[] = [];
    const res: any = { once: () => undefined, status: () => res, setHeader: () => undefined, flushHeaders: () => undefined, write: (s: string) => written.push(s), end: () => undefined, destroy: () => (destroyed = true), writableLength: STREAM_BUFFER_BYTES + 1 };
    stream.add(res);
    await new Promise((r) => setTimeout(r, 10 * (STREAM_MAX_SKIPS + 20)));
    expect(written).toEqual(['retry: 2000\n\n']);
    expect(stream.skipped).toBe(STREAM_MAX_SKIPS);
    expect(destroyed).toBe(true);
    expect(stream.size).toBe(0);
    stream.closeAll();
  });
});
