// The dashboard's first paint with many busy lanes: `sluice serve` (no worker, so every lane keeps its
// queued work) on a private redis-server, --lanes keys (default 100,000) submitted over HTTP, then
// Debian's chromium (playwright-core) logs in and loads /ui --reps times. Per load: navigation to
// first contentful paint (the browser's own paint timing), navigation to the overview's figures on
// screen (the busy-lane count showing every lane), and the queue page's busiest-lanes table on screen.
// Also: Redis commands per second with the overview open (its live stream) against none open.
//   npx tsx bench/dashboard-paint.ts [--lanes 100000] [--reps 5] [--inflight 64]
// Prints one JSON document on stdout; progress goes to stderr.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Agent, request } from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { chromium } from 'playwright-core';
import { REPO_ROOT, startSluice, tempDir } from '../test/helpers/e2e.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({ options: { lanes: { type: 'string', default: '100000' }, reps: { type: 'string', default: '5' }, inflight: { type: 'string', default: '64' } } });
const LANES = Number(flags.lanes);
const REPS = Number(flags.reps);
const INFLIGHT = Number(flags.inflight);
if (!(LANES >= 100 && LANES <= 500_000)) throw new Error('--lanes: 100 .. 500000');
if (!(REPS >= 1 && REPS <= 20)) throw new Error('--reps: 1 .. 20');
const ADMIN = 'bench-dashboard-admin-token-0123';
const log = (m: string) => process.stderr.write(`[dashboard-paint ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
setTimeout(() => {
  log('watchdog: exiting');
  process.exit(124);
}, 900_000).unref();

if (!existsSync(join(REPO_ROOT, 'dist', 'ui', 'app.js'))) execFileSync(process.execPath, ['scripts/build-ui.mjs'], { cwd: REPO_ROOT, stdio: 'inherit' });
const redis = await startRedis();
const dir = tempDir('dashboard-bench');
dir.write('run.mjs', 'export default async () => 1;\n');
const config = dir.write('rules.yaml', 'auth: none\nqueues:\n  - name: bulk\n    rate_per_second: 1\n    capacity: 10\n    key: body\n    handler: { type: module, path: ./run.mjs }\n');
const serve = await startSluice('serve', { config, redisUrl: redis.url, env: { SLUICE_ADMIN_TOKEN: ADMIN, }, readyTimeoutMs: 60_000 });
const url = new URL(serve.url);
const agent = new Agent({ keepAlive: true, maxSockets: INFLIGHT });

function submit(i: number): Promise<number> {
  const body = JSON.stringify({ key: `tenant-${i}`, payload: { i } });
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: '/v1/queues/bulk/jobs', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.once('end', () => resolve(res.statusCode ?? 0));
    });
    req.once('error', reject);
    req.end(body);
  });
}

try {
  const t0 = Date.now();
  let next = 0;
  let refused = 0;
  await Promise.all(
    Array.from({ length: INFLIGHT }, async () => {
      while (next < LANES) {
        const i = next++;
        if ((await submit(i)) !== 202) refused += 1;
        if (i % 20_000 === 0) log(`submitted ${i}`);
      }
    }),
  );
  const fillSeconds = (Date.now() - t0) / 1000;
  const busy = ((await (await fetch(`${serve.url}/v1/admin/queues`, { headers: { authorization: `Bearer ${ADMIN}` } })).json()) as any).queues[0].live.busyLanes as number;
  log(`${LANES} submits in ${fillSeconds.toFixed(1)} s (${refused} refused); ${busy} busy lanes`);

  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${serve.url}/ui`);
  await page.fill('#token', ADMIN);
  await Promise.all([page.waitForURL(`${serve.url}/ui`), page.click('button[type=submit]')]);
  await page.locator('[data-queue="bulk"]').waitFor();

  const runs: { fcpMs: number; figuresMs: number; lanesTableMs: number }[] = [];
  for (let r = 0; r < REPS; r++) {
    await page.goto('about:blank');
    await page.goto(`${serve.url}/ui#/`, { waitUntil: 'commit' });
    // Browser-side functions reach `document` through globalThis: this file is type-checked without the DOM library
    // (and a string expression would be an eval, which the page's CSP forbids).
    await page.waitForFunction((n) => (globalThis as any).document.querySelector('[data-queue="bulk"] [data-field="busyLanes"]')?.textContent === String(n), busy, { polling: 'raf', timeout: 10_000 });
    const [fcpMs, figuresMs] = await page.evaluate(() => [performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1, performance.now()]);
    await page.goto('about:blank');
    await page.goto(`${serve.url}/ui#/queue/bulk`, { waitUntil: 'commit' });
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('table.lanes tbody tr').length === 25, undefined, { polling: 'raf', timeout: 10_000 });
    const lanesTableMs = await page.evaluate(() => performance.now());
    runs.push({ fcpMs: Math.round(fcpMs!), figuresMs: Math.round(figuresMs!), lanesTableMs: Math.round(lanesTableMs) });
    log(`run ${r + 1}: ${JSON.stringify(runs[runs.length - 1])}`);
  }

  // Redis commands per second: the overview open (its stream) vs no page at all.
  const probe = new Redis(redis.url);
  const commands = async () => Number(/total_commands_processed:(\d+)/.exec(await probe.info('stats'))![1]);
  const rate = async (ms: number) => {
    const a = await commands();
    await new Promise((r) => setTimeout(r, ms));
    return ((await commands()) - a - 1) / (ms / 1000);
  };
  await page.goto(`${serve.url}/ui#/`);
  await page.locator('[data-queue="bulk"]').waitFor();
  await new Promise((r) => setTimeout(r, 1500));
  const withDashboard = await rate(10_000);
  await page.goto('about:blank');
  await new Promise((r) => setTimeout(r, 1500));
  const withoutDashboard = await rate(10_000);
  probe.disconnect();
  await browser.close();

  const sorted = (k: keyof (typeof runs)[number]) => runs.map((x) => x[k]).sort((a, b) => a - b);
  const median = (k: keyof (typeof runs)[number]) => sorted(k)[Math.floor(runs.length / 2)];
  console.log(
    JSON.stringify(
      {
        bench: 'dashboard-paint',
        at: new Date().toISOString(),
        machine: { cpus: os.cpus().length, loadavg: os.loadavg().map((x) => Number(x.toFixed(2))) },
        chromium: browser.version(),
        lanes: LANES,
        busyLanes: busy,
        fill: { seconds: Number(fillSeconds.toFixed(1)), refused },
        runs,
        medianMs: { firstContentfulPaint: median('fcpMs'), overviewFigures: median('figuresMs'), busiestLanesTable: median('lanesTableMs') },
        maxMs: { firstContentfulPaint: sorted('fcpMs').at(-1), overviewFigures: sorted('figuresMs').at(-1), busiestLanesTable: sorted('lanesTableMs').at(-1) },
        redisCommandsPerSecond: { overviewOpen: Number(withDashboard.toFixed(1)), noDashboard: Number(withoutDashboard.toFixed(1)) },
      },
      null,
      2,
    ),
  );
} finally {
  agent.destroy();
  await serve.stop().catch(() => undefined);
  await redis.dispose();
  dir.dispose();
}
