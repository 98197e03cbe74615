// Redis CPU of one all-or-nothing request over three limits (lua/limits.lua: token bucket, sliding
// counter, fixed window, the three rules of bench/http.ts `rules3`), without HTTP: limitAll() in a
// closed loop, the calls of one event-loop turn batched as the middleware's are. Measured from
// `INFO commandstats` (evalsha usec, reset before each run) and `INFO cpu` (the main thread), per
// request, next to the Node CPU per request. With --base DIR the same loop also runs on another
// checkout's code (its src/ imported here, its lua/ loaded by its own registry), interleaved rep by
// rep on the same private redis-server: before/after in one run.
//   npx tsx bench/limits-script.ts [--duration 3] [--reps 3] [--concurrency 50] [--keys 1] [--refused 0] [--base DIR]
// --keys 1: every request from one client (the http bench's case: one IP); --refused 1: the third
// limit refuses every request (the other two are then only checked).
// Prints one JSON document on stdout; progress goes to stderr.
import os from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop } from './lib/load.js';
import { identityOf } from './lib/policies.js';

type Index = typeof import('../src/index.js');
type AllOrNothing = typeof import('../src/limiters/all-or-nothing.js');

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    reps: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '50' },
    keys: { type: 'string', default: '1' },
    refused: { type: 'string', default: '0' },
    base: { type: 'string' },
  },
});
const durationMs = Number(flags.duration) * 1000;
const reps = Number(flags.reps);
const concurrency = Number(flags.concurrency);
const keys = Number(flags.keys);
const refused = flags.refused === '1';
if (!(durationMs > 0 && durationMs <= 30_000)) throw new Error('--duration: seconds in (0, 30]');
if (!(reps >= 1 && reps <= 9)) throw new Error('--reps: 1 .. 9');
if (!(concurrency >= 1 && concurrency <= 1000)) throw new Error('--concurrency: 1 .. 1000');
if (!(keys >= 1 && keys <= 1_000_000)) throw new Error('--keys: 1 .. 1000000');
const log = (msg: string) => process.stderr.write(`[limits ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const budgetMs = (flags.base ? 2 : 1) * reps * (durationMs + 2_000) + 120_000;
setTimeout(() => {
  log(`watchdog: still running after ${budgetMs} ms, exiting`);
  process.exit(124);
}, budgetMs).unref();

/** The three limits of `rules3`, nothing reached (or, with --refused 1, the third always refusing). */
const POLICIES = [
  { name: 'b3-tb', algorithm: 'token-bucket', capacity: 1e9, refillPerSecond: 1e6, timeoutMs: 10_000 },
  { name: 'b3-sc', algorithm: 'sliding-counter', limit: 1e9, windowMs: 60_000, timeoutMs: 10_000 },
  { name: 'b3-fw', algorithm: 'fixed-window', limit: refused ? 1 : 1e9, windowMs: 60_000, timeoutMs: 10_000 },
] as const;

const server = await startRedis();
const raw = new Redis(server.port, '127.0.0.1');

interface Tree {
  label: 'this' | 'base';
  close(): Promise<void>;
  op(): Promise<unknown>;
}

async function tree(label: 'this' | 'base', dir: string): Promise<Tree> {
  const url = (p: string) => pathToFileURL(join(dir, p)).href;
  const index = (await import(url('src/index.ts'))) as Index;
  const { limitAll } = (await import(url('src/limiters/all-or-nothing.ts'))) as AllOrNothing;
  const sluice = index.createSluice({ redis: server.url, prefix: `b3${label}` });
  await sluice.ready();
  const limiters = POLICIES.map((p) => sluice.limiter(p));
  const next = identityOf(keys);
  return {
    label,
    close: () => sluice.close(),
    op: () => {
      const key = next();
      // One slot for the three keys, as the rules file's slot_key gives them: one `limits` call.
      return limitAll(limiters.map((limiter) => ({ limiter, key, options: { slot: key } })));
    },
  };
}

async function cpuMainSeconds(): Promise<number> {
  const text = await raw.info('cpu');
  const g = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(text)?.[1] ?? 0);
  return g('used_cpu_user_main_thread') + g('used_cpu_sys_main_thread');
}

/** Script calls (FCALL once the library is loaded, EVALSHA before it) and their µs. */
async function evalsha(): Promise<{ calls: number; usec: number }> {
  let calls = 0;
  let usec = 0;
  for (const m of (await raw.info('commandstats')).matchAll(/cmdstat_(?:fcall|evalsha):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { calls, usec };
}

interface Row {
  tree: 'this' | 'base';
  rep: number;
  requests: number;
  requestsPerSec: number;
  /** EVALSHA calls per request (below 1: the calls of one turn go as one batched call). */
  evalshaPerReq: number;
  /** usec of EVALSHA (the scripts, their commands inside) per request, from commandstats. */
  evalshaUsPerReq: number;
  /** Redis main-thread CPU per request (the scripts plus reading, parsing and replying). */
  redisCpuUsPerReq: number;
  /** This process's CPU per request (both trees run here: same load generator). */
  nodeCpuUsPerReq: number;
}

const r2 = (x: number) => Math.round(x * 100) / 100;
const trees = [await tree('this', join(import.meta.dirname, '..'))];
if (flags.base) trees.push(await tree('base', flags.base));
const loadBefore = os.loadavg().map(r2);
const rows: Row[] = [];
try {
  for (const t of trees) await closedLoop(t.op, concurrency, 500);
  for (let rep = 1; rep <= reps; rep++) {
    for (const t of rep % 2 ? trees : [...trees].reverse()) {
      await raw.config('RESETSTAT');
      const cpu0 = await cpuMainSeconds();
      const node0 = process.cpuUsage();
      const r = await closedLoop(t.op, concurrency, durationMs);
      const node = process.cpuUsage(node0);
      const cpu1 = await cpuMainSeconds();
      const e = await evalsha();
      const row: Row = {
        tree: t.label,
        rep,
        requests: r.ops,
        requestsPerSec: r.opsPerSec,
        evalshaPerReq: r2(e.calls / r.ops),
        evalshaUsPerReq: r2(e.usec / r.ops),
        redisCpuUsPerReq: r2(((cpu1 - cpu0) * 1e6) / r.ops),
        nodeCpuUsPerReq: r2((node.user + node.system) / r.ops),
      };
      if (r.errors) throw new Error(`${r.errors} failed calls`);
      rows.push(row);
      log(JSON.stringify(row));
    }
  }
} finally {
  for (const t of trees) await t.close();
  raw.disconnect();
  await server.dispose();
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const summary = Object.fromEntries(
  trees.map((t) => {
    const of = rows.filter((r) => r.tree === t.label);
    return [t.label, { requestsPerSec: Math.round(mean(of.map((r) => r.requestsPerSec))), evalshaUsPerReq: r2(mean(of.map((r) => r.evalshaUsPerReq))), redisCpuUsPerReq: r2(mean(of.map((r) => r.redisCpuUsPerReq))), nodeCpuUsPerReq: r2(mean(of.map((r) => r.nodeCpuUsPerReq))) }];
  }),
);
process.stdout.write(
  `${JSON.stringify(
    {
      bench: 'limits-script',
      command: `npx tsx bench/limits-script.ts --duration ${durationMs / 1000} --reps ${reps} --concurrency ${concurrency} --keys ${keys} --refused ${refused ? 1 : 0}${flags.base ? ` --base ${flags.base}` : ''}`,
      machine: { cpus: os.cpus().length, node: process.version, loadAvg1m5m15m: { before: loadBefore, after: os.loadavg().map(r2) } },
      policies: POLICIES,
      summary: 'means over reps',
      results: summary,
      rows,
    },
    null,
    2,
  )}\n`,
);
