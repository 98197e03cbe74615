// Outflow accuracy with live viewers (issue 10's figure): real `sluice serve` + `sluice worker` on a
// private redis-server, one lane at 20/s with a backlog of jobs, run twice — with nobody watching, and
// with 10 dashboard streams (`GET /v1/admin/stream`) and 100 job event streams (`GET …/jobs/:id/events`)
// open and read. Per run: the most handler starts in any 1 s, the achieved rate over the run, and the
// Redis commands per second (INFO total_commands_processed) — the difference is what the live views cost.
//   npx tsx bench/live-load.ts [--jobs 200] [--dashboards 10] [--streams 100]
// Prints one JSON document on stdout; progress on stderr.
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { pollUntil, startSluice, stopAll, tempDir } from '../test/helpers/e2e.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { maxInWindow } from '../test/helpers/throttle-stats.js';

const { values: flags } = parseArgs({ options: { jobs: { type: 'string', default: '200' }, dashboards: { type: 'string', default: '10' }, streams: { type: 'string', default: '100' } } });
const JOBS = Number(flags.jobs);
const log = (m: string) => process.stderr.write(`${m}\n`);
const ADMIN = 'bench-admin-token-0123456789abcdef';
const RATE = 20;

const redis = await startRedis();
const dir = tempDir('bench-live');
dir.write('run.mjs', 'export default async () => ({ startedAt: Date.now() });\n');
const config = dir.write('rules.yaml', `auth: none\nqueues:\n  - name: paced\n    rate_per_second: ${RATE}\n    capacity: 100000\n    key: body\n    handler: { type: module, path: ./run.mjs }\n`);
const env = { SLUICE_ADMIN_TOKEN: ADMIN };
const [serve, worker] = await Promise.all([
  startSluice('serve', { config, redisUrl: redis.url, readyTimeoutMs: 60_000, env }),
  startSluice('worker', { config, redisUrl: redis.url, readyTimeoutMs: 60_000, env }),
]);
const raw = new Redis(redis.port, '127.0.0.1');
const commands = async () => Number(/total_commands_processed:(\d+)/.exec(await raw.info('stats'))![1]);

/** Reads a streaming response to its end (or until aborted), counting bytes. */
function follow(url: string, headers: Record<string, string>, abort: AbortSignal): { bytes: () => number } {
  let bytes = 0;
  void (async () => {
    const res = await fetch(url, { headers, signal: abort });
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
    }
  })().catch(() => undefined);
  return { bytes: () => bytes };
}

async function run(name: string, live: boolean) {
  const ids: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    const res = await fetch(`${serve.url}/v1/queues/paced/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key: `lane-${name}`, payload: { i } }) });
    ids.push(((await res.json()) as { id: string }).id);
  }
  const abort = new AbortController();
  const followers: { bytes: () => number }[] = [];
  if (live) {
    for (let i = 0; i < Number(flags.dashboards); i++) followers.push(follow(`${serve.url}/v1/admin/stream`, { authorization: `Bearer ${ADMIN}` }, abort.signal));
    for (const id of ids.slice(-Number(flags.streams))) followers.push(follow(`${serve.url}/v1/queues/paced/jobs/${id}/events`, {}, abort.signal));
  }
  const c0 = await commands();
  const t0 = Date.now();
  const results = new Map<string, number>();
  await pollUntil(
    async () => {
      for (const id of ids) {
        if (results.has(id)) continue;
        const body = (await (await fetch(`${serve.url}/v1/queues/paced/jobs/${id}`)).json()) as { state: string; result?: { startedAt: number } };
        if (body.state !== 'completed') break;
        results.set(id, body.result!.startedAt);
      }
      return results.size;
    },
    (n) => n === ids.length,
    (JOBS / RATE) * 1000 + 60_000,
    500,
    'all jobs',
  );
  const seconds = (Date.now() - t0) / 1000;
  const perSecond = Math.round((await commands()) - c0) / seconds;
  abort.abort();
  const starts = [...results.values()].sort((a, b) => a - b);
  const out = {
    jobs: starts.length,
    maxStartsIn1s: maxInWindow(starts, 1000),
    achievedPerSecond: Math.round(((starts.length - 1) / ((starts.at(-1)! - starts[0]!) / 1000)) * 1000) / 1000,
    redisCommandsPerSecond: Math.round(perSecond),
    liveBytesRead: followers.reduce((a, f) => a + f.bytes(), 0),
  };
  log(`${name}: ${JSON.stringify(out)}`);
  return out;
}

try {
  const none = await run('none', false);
  const live = await run('live', true);
  process.stdout.write(
    `${JSON.stringify({ bench: 'live-load', at: new Date().toISOString(), rate: RATE, dashboards: Number(flags.dashboards), jobStreams: Number(flags.streams), none, live }, null, 2)}\n`,
  );
} finally {
  raw.disconnect();
  await stopAll(serve, worker);
  await redis.dispose();
  dir.dispose();
}
