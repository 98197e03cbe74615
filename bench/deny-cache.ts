// A flood on one key that is over its limit, from ONE Node process at N decisions in flight: sluice's
// limiter with the deny cache (what the HTTP edge uses), without it, and rate-limiter-flexible's
// RateLimiterRedis (its default, and with its own `inMemoryBlockOnConsumed` in-process block), all
// fixed windows of 100 per 60 s, on a private redis-server. Runs interleaved rep by rep.
//   npx tsx bench/deny-cache.ts [--duration 3] [--reps 3] [--concurrency 64]
// Prints one JSON document on stdout; progress goes to stderr.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createSluice } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop, redisCpuSeconds, type LoadResult } from './lib/load.js';

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    reps: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '64' },
  },
});
const durationMs = Number(flags.duration) * 1000;
const reps = Number(flags.reps);
const concurrency = Number(flags.concurrency);
if (!(durationMs > 0 && durationMs <= 20_000)) throw new Error('--duration: seconds in (0, 20]');
if (!(reps >= 1 && reps <= 5)) throw new Error('--reps: 1 .. 5');
if (!(concurrency >= 1 && concurrency <= 1024)) throw new Error('--concurrency: 1 .. 1024');

const log = (msg: string) => process.stderr.write(`[deny-cache ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const KEY = 'u:123';
const variants = ['sluice-deny-cache', 'sluice-no-cache', 'rlf', 'rlf-in-memory-block'] as const;
type Variant = (typeof variants)[number];

setTimeout(() => {
  log('watchdog: exiting');
  process.exit(124);
}, (variants.length * reps * (durationMs + 2_000)) + 60_000).unref();

const server = await startRedis();
const raw = new Redis(server.port, '127.0.0.1');
const sluice = createSluice({ redis: server.url, prefix: 'bdc' });
const rlfClient = new Redis(server.port, '127.0.0.1');
try {
  await sluice.ready();
  const policy = { name: 'flood', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 } as const;
  const cached = sluice.limiter(policy, { denyCache: true });
  const uncached = sluice.limiter({ ...policy, name: 'flood2' });
  const rlf = new RateLimiterRedis({ storeClient: rlfClient, keyPrefix: 'rlf', points: 100, duration: 60 });
  const rlfBlock = new RateLimiterRedis({ storeClient: rlfClient, keyPrefix: 'rlfb', points: 100, duration: 60, inMemoryBlockOnConsumed: 100 });
  const refusedRlf = (p: Promise<unknown>) => p.then(
    () => true,
    (e: unknown) => {
      if (e instanceof Error) throw e;
      return false;
    },
  );
  const ops: Record<Variant, () => Promise<unknown>> = {
    'sluice-deny-cache': () => cached.limit(KEY),
    'sluice-no-cache': () => uncached.limit(KEY),
    rlf: () => refusedRlf(rlf.consume(KEY)),
    'rlf-in-memory-block': () => refusedRlf(rlfBlock.consume(KEY)),
  };
  // Use the limit up first, so every measured call is refused.
  for (const v of variants) for (let i = 0; i < 101; i++) await ops[v]();
  const loadBefore = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const runs: { variant: Variant; rep: number; result: LoadResult; redisCpuUsPerOp: number; nodeCpuUsPerOp: number }[] = [];
  for (let rep = 1; rep <= reps; rep++) {
    for (const v of variants) {
      const r0 = await redisCpuSeconds(() => raw.info('cpu'));
      const c0 = process.cpuUsage();
      const result = await closedLoop(ops[v], concurrency, durationMs);
      const c1 = process.cpuUsage(c0);
      const r1 = await redisCpuSeconds(() => raw.info('cpu'));
      const run = {
        variant: v,
        rep,
        result,
        redisCpuUsPerOp: Math.round((((r1 - r0) * 1e6) / result.ops) * 100) / 100,
        nodeCpuUsPerOp: Math.round(((c1.user + c1.system) / result.ops) * 100) / 100,
      };
      runs.push(run);
      log(`rep ${rep} ${v}: ${result.opsPerSec}/s, p99 ${result.p99Ms} ms, node ${run.nodeCpuUsPerOp} µs/op, redis ${run.redisCpuUsPerOp} µs/op`);
    }
  }
  const loadAfter = os.loadavg().map((x) => Math.round(x * 100) / 100);
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    const m = Math.floor(s.length / 2);
    return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
  };
  const of = (v: Variant) => runs.filter((r) => r.variant === v);
  const ratio = (a: Variant, b: Variant) => {
    const per = of(a).map((r, i) => r.result.opsPerSec / of(b)[i]!.result.opsPerSec);
    return { median: Math.round(median(per) * 100) / 100, perRep: per.map((x) => Math.round(x * 100) / 100) };
  };
  const result = {
    bench: 'deny-cache',
    command: `npx tsx bench/deny-cache.ts --duration ${flags.duration} --reps ${reps} --concurrency ${concurrency}`,
    machine: { cpus: os.cpus().length, node: process.version, loadAvg1m5m15m: { before: loadBefore, after: loadAfter } },
    setup: { key: KEY, policy: 'fixed window, 100 per 60 s (rlf: points 100, duration 60)', concurrency, durationMs, every: 'call refused (the limit is used up first)' },
    summary: Object.fromEntries(
      variants.map((v) => [
        v,
        {
          opsPerSec: median(of(v).map((r) => r.result.opsPerSec)),
          opsPerSecPerRep: of(v).map((r) => r.result.opsPerSec),
          p99Ms: median(of(v).map((r) => r.result.p99Ms)),
          nodeCpuUsPerOp: median(of(v).map((r) => r.nodeCpuUsPerOp)),
          redisCpuUsPerOp: median(of(v).map((r) => r.redisCpuUsPerOp)),
        },
      ]),
    ),
    ratios: {
      'sluice-deny-cache ÷ rlf': ratio('sluice-deny-cache', 'rlf'),
      'sluice-deny-cache ÷ rlf-in-memory-block': ratio('sluice-deny-cache', 'rlf-in-memory-block'),
      'sluice-deny-cache ÷ sluice-no-cache': ratio('sluice-deny-cache', 'sluice-no-cache'),
      'sluice-no-cache ÷ rlf': ratio('sluice-no-cache', 'rlf'),
    },
    runs,
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await sluice.close();
  rlfClient.disconnect();
  raw.disconnect();
  await server.dispose();
}
