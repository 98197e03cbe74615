// The dashboard (/ui) in a real browser: Debian's chromium driven by playwright-core, against real
// `sluice serve` and `sluice worker` processes on a private Redis. A wrong token shows an error and no
// data; the login sets an HttpOnly, SameSite=Strict cookie that is not the token; the overview's
// figures equal GET /v1/admin/queues; a lane paused from its button stops starting (starts measured
// in the worker's handler) and starts again when resumed; a failed job retried from the UI completes;
// a key search finds the lane hashed as stored; drain and undrain; a cookie alone cannot change state.
// With SLUICE_SCREENSHOTS=1 (npm run screenshots) the same session saves docs/images/dashboard-*.png.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pollUntil, postJson, REPO_ROOT, startSluice, stopAll, tempDir, type SluiceProcess, type TempDir } from '../helpers/e2e.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';

const ADMIN = 'e2e-dashboard-admin-token-42';
const SHOTS = process.env.SLUICE_SCREENSHOTS === '1';
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'];

// Every start is one line `<lane> <epoch ms>` in starts.log next to the handler; a job with
// payload { failOnce: true } fails its first run (a marker file says it did) and completes on a retry.
const HANDLER = `import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
const dir = new URL('./', import.meta.url);
export default async (job) => {
  appendFileSync(new URL('starts.log', dir), job.lane + ' ' + Date.now() + '\\n');
  if (job.data && job.data.failOnce) {
    const marker = new URL('failed-' + job.id.replace(/[^A-Za-z0-9_-]/g, '_'), dir);
    if (!existsSync(marker)) { writeFileSync(marker, '1'); throw new Error('fails once'); }
  }
  return { ok: true };
};
`;
const RULES = `auth: none
queues:
  - name: mail
    rate_per_second: 5
    capacity: 500
    key: body
    quotas:
      - { scope: key, period: day, limit: 1000000, time_zone: Europe/Berlin }
    handler: { type: module, path: ./run.mjs }
  - name: reports
    rate_per_second: 0.01
    capacity: 20
    global_rate_per_second: 50
    key: body
    handler: { type: module, path: ./run.mjs }
`;

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;
let worker: SluiceProcess;
let browser: Browser;
let page: Page;

const admin = { authorization: `Bearer ${ADMIN}` };
async function adminGet(path: string): Promise<any> {
  const res = await fetch(`${serve.url}${path}`, { headers: admin });
  expect(res.status, path).toBe(200);
  return res.json();
}
const submit = (queue: string, key: string, payload: unknown) => postJson(`${serve.url}/v1/queues/${queue}/jobs`, { key, payload });
const startsOf = (lane: string): number[] => {
  const file = join(dir.path, 'starts.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith(`${lane} `))
    .map((l) => Number(l.slice(lane.length + 1)));
};
const shot = async (name: string) => {
  if (SHOTS) await page.screenshot({ path: join(REPO_ROOT, 'docs', 'images', `dashboard-${name}.png`) });
};
const field = (scope: string, name: string) => page.locator(`${scope} [data-field="${name}"]`).first().innerText();

beforeAll(async () => {
  // A fresh clone run by `vitest` alone has no bundle yet: make it (esbuild, well under a second).
  if (!existsSync(join(REPO_ROOT, 'dist', 'ui', 'app.js'))) execFileSync(process.execPath, ['scripts/build-ui.mjs'], { cwd: REPO_ROOT, stdio: 'inherit' });
  redis = await startRedis();
  dir = tempDir('dashboard');
  dir.write('run.mjs', HANDLER);
  const config = dir.write('rules.yaml', RULES);
  const env = { SLUICE_ADMIN_TOKEN: ADMIN };
  [serve, worker, browser] = await Promise.all([
    startSluice('serve', { config, redisUrl: redis.url, env, readyTimeoutMs: 60_000 }),
    startSluice('worker', { config, redisUrl: redis.url, env, args: ['--concurrency', '20'], readyTimeoutMs: 60_000 }),
    chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS }),
  ]);
  page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await stopAll(serve, worker);
  await redis?.dispose();
  dir?.dispose();
});

describe('/ui in chromium', () => {
  it('refuses a wrong token with an error and shows no data', async () => {
    await page.goto(`${serve.url}/ui`);
    await page.fill('#token', 'not-the-token');
    const [res] = await Promise.all([page.waitForResponse((r) => r.url().endsWith('/ui/login')), page.click('button[type=submit]')]);
    expect(res.status()).toBe(401);
    expect(await page.locator('#login-error').innerText()).toBe('That is not the admin token.');
    expect(await page.locator('[data-queue]').count()).toBe(0);
    expect((await page.context().cookies()).map((c) => c.name)).toEqual([]);
    // Nor can the page reach the admin API.
    expect(await page.evaluate(async () => (await fetch('/v1/admin/queues')).status)).toBe(401);
    await shot('login-error');
  });

  it('logs in with the admin token: an HttpOnly, SameSite=Strict session cookie that is not the token', async () => {
    await page.goto(`${serve.url}/ui`);
    await page.fill('#token', ADMIN);
    await Promise.all([page.waitForURL(`${serve.url}/ui`), page.click('button[type=submit]')]);
    await page.locator('[data-queue="mail"]').waitFor();
    const cookies = await page.context().cookies();
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path])).toEqual([['sluice_ui', true, 'Strict', '/']]);
    expect(cookies[0]!.value).not.toContain(ADMIN);
    expect(cookies[0]!.value).toMatch(/^v1\.\d+\.[A-Za-z0-9_-]{43}$/);
    expect(page.url()).not.toContain(ADMIN);
    expect(await page.locator('[data-field="status"]').innerText()).toMatch(/^(connecting|live)$/);
    await pollUntil(() => page.locator('[data-field="status"]').innerText(), (s) => s === 'live', 10_000, 200, 'the stream');
  });

  it("shows the admin API's figures in the overview", async () => {
    // reports: 0.01/s per lane, so 5 of 6 jobs per lane stay queued for minutes: stable figures.
    for (const lane of ['r1', 'r2', 'r3']) for (let i = 0; i < 6; i++) expect((await submit('reports', lane, { i })).status).toBe(202);
    const scope = '[data-queue="reports"]';
    const ui = async () => ({
      queued: Number(await field(scope, 'queued')),
      failed: Number(await field(scope, 'failed')),
      busyLanes: Number(await field(scope, 'busyLanes')),
      rate: await field(scope, 'ratePerSecond'),
      globalCap: await field(scope, 'globalCap'),
    });
    const api = async () => {
      const q = (await adminGet('/v1/admin/queues')).queues.find((x: any) => x.name === 'reports');
      return { queued: q.live.queued, failed: q.live.failed, busyLanes: q.live.busyLanes, rate: `${q.config.ratePerSecond}/s`, globalCap: `${Math.round(q.live.globalCap.inUse * 100)}% of ${q.live.globalCap.ratePerSecond}/s` };
    };
    // The stream sends once a second: wait for a frame after the submits and after the second of the
    // three first starts (the cap's use falls back to 0), and compare it with the API read at that moment.
    const seen = await pollUntil(async () => [await ui(), await api()] as const, ([u, a]) => JSON.stringify(u) === JSON.stringify(a) && u.queued === 15 && u.globalCap === '0% of 50/s', 10_000, 250, 'the overview to show the API figures');
    expect(seen[0]).toEqual({ queued: 15, failed: 0, busyLanes: 3, rate: '0.01/s', globalCap: '0% of 50/s' });
    expect(await page.locator('[data-queue="reports"] .chart canvas').count()).toBe(1);
  });

  it("stops a lane's starts with its Pause button and starts them again with Resume", async () => {
    // 5/s for 100 jobs: 20 s of work.
    for (let i = 0; i < 100; i++) expect((await submit('mail', 'acme', { i })).status).toBe(202);
    await pollUntil(async () => startsOf('acme').length, (n) => n >= 3, 10_000, 100, 'acme to start');
    if (SHOTS) {
      // The overview while mail runs: a few seconds of its chart.
      await page.goto(`${serve.url}/ui#/`);
      await new Promise((r) => setTimeout(r, 4_000));
      await shot('overview');
    }
    await page.goto(`${serve.url}/ui#/lane/mail/acme`);
    await page.locator('[data-action="pause"]').waitFor();
    await shot('lane');
    await page.locator('[data-action="pause"]').click();
    await page.locator('[data-action="resume"]').waitFor();
    const pausedAt = Date.now();
    expect(await field('.lane-page', 'paused')).toBe('paused until resumed');
    await shot('lane-paused');
    // Starts already under way when the click landed may finish; none begin 300 ms after it.
    await new Promise((r) => setTimeout(r, 2_000));
    const during = startsOf('acme').filter((t) => t > pausedAt + 300);
    expect(during).toEqual([]);
    const before = startsOf('acme').length;
    // While paused the lane's figures hold still: the page shows the API's.
    const laneApi = await adminGet('/v1/admin/queues/mail/lanes/acme');
    expect(Date.parse(laneApi.pausedUntil)).toBeGreaterThan(Date.now() + 365 * 86_400_000);
    expect(laneApi.depth).toBeGreaterThan(0);
    await pollUntil(() => field('.lane-page', 'depth'), (d) => d === String(laneApi.depth), 3_000, 100, 'the lane depth');
    // The key's spend quota: what the API counts (the paused lane starts nothing meanwhile).
    expect(laneApi.quotas).toHaveLength(1);
    expect(await field('.lane-page', 'quota0')).toContain(`${laneApi.quotas[0].used} of 1000000 calls`);
    expect(laneApi.quotas[0].used).toBeGreaterThanOrEqual(3);
    await page.locator('[data-action="resume"]').click();
    await page.locator('[data-action="pause"]').waitFor();
    await pollUntil(async () => startsOf('acme').length, (n) => n >= before + 3, 10_000, 100, 'acme to start again');
    expect(await field('.lane-page', 'paused')).toBe('running');
  });

  it('retries a failed job from the failed jobs table, and it completes', async () => {
    const res = await submit('mail', 'retry-lane', { failOnce: true });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    await pollUntil(() => adminGet(`/v1/admin/queues/mail/jobs/${encodeURIComponent(id)}`), (j) => j.state === 'failed', 10_000, 100, 'the job to fail');
    await page.goto(`${serve.url}/ui#/queue/mail`);
    const row = page.locator(`tr[data-job="${id}"]`);
    await row.waitFor();
    await shot('queue');
    await row.locator('button').click();
    await page.locator('.note[role=status]').waitFor();
    expect(await page.locator('.note[role=status]').innerText()).toMatch(new RegExp(`^job ${id} queued again, starts `));
    const done = await pollUntil(() => adminGet(`/v1/admin/queues/mail/jobs/${encodeURIComponent(id)}`), (j) => j.state === 'completed', 10_000, 100, 'the retried job to complete');
    expect(done.result).toEqual({ ok: true });
  });

  it('finds a lane by its key, hashed exactly as a submit stores it', async () => {
    const key = 'user:42 with spaces';
    // The first starts at once; the second waits (0.01/s), so the lane has one queued job.
    for (const x of [1, 2]) expect((await submit('reports', key, { x })).status).toBe(202);
    const hashed = `#${createHash('sha256').update(key).digest('base64url').slice(0, 22)}`;
    await page.goto(`${serve.url}/ui#/queue/reports`);
    await page.fill('input[name=key]', key);
    await page.click('.search button');
    await page.locator(`.lane-page[data-lane="${hashed}"]`).waitFor();
    await pollUntil(() => field('.lane-page', 'jobs'), (v) => v === '1', 5_000, 100, 'the lane detail');
  });

  it('drains and undrains a queue; a cookie without the X-Sluice-UI header changes nothing', async () => {
    await page.goto(`${serve.url}/ui#/queue/mail`);
    await page.getByRole('button', { name: /^Drain/ }).click();
    await pollUntil(() => adminGet('/v1/admin/queues'), (b) => b.queues.find((q: any) => q.name === 'mail').live.draining === true, 5_000, 100, 'drain');
    await page.getByRole('button', { name: /^Undrain/ }).click();
    await pollUntil(() => adminGet('/v1/admin/queues'), (b) => b.queues.find((q: any) => q.name === 'mail').live.draining === false, 5_000, 100, 'undrain');
    const audit = (await adminGet('/v1/admin/audit?limit=2')).entries.map((e: any) => [e.who, e.action, e.queue]);
    expect(audit).toEqual([['dashboard', 'queue.undrain', 'mail'], ['dashboard', 'queue.drain', 'mail']]);
    const statuses = await page.evaluate(async () => [
      (await fetch('/v1/admin/queues/mail/drain', { method: 'POST' })).status,
      (await fetch('/v1/admin/queues/mail/undrain', { method: 'POST', headers: { 'X-Sluice-UI': '1' } })).status,
    ]);
    expect(statuses).toEqual([401, 200]);
    expect((await adminGet('/v1/admin/queues')).queues.find((q: any) => q.name === 'mail').live.draining).toBe(false);
  });

  it('shuts down at once with a figures stream open (SIGTERM: exit 0, not the forced exit after 25 s)', async () => {
    const res = await fetch(`${serve.url}/v1/admin/stream`, { headers: admin });
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^retry: 2000\n\n/);
    expect(await serve.stop('SIGTERM', 20_000)).toEqual({ code: 0, signal: null });
    // The server ended the stream.
    for (;;) if ((await reader.read()).done) break;
  });
});
