// Decision throughput and latency of every algorithm from ONE Node process, next to the raw server
// ceiling (redis-benchmark running the same script), on a private redis-server it starts and stops.
//   npx tsx bench/decisions.ts [--duration 1.5] [--warmup 0.3] [--concurrency 1,64,512] [--keys 1,100000]
//                              [--algorithms token-bucket,...] [--autopipe 1,0] [--raw 1] [--reps 1]
// Prints one JSON document on stdout; progress goes to stderr.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { createSluice, type Algorithm, type Limiter, type Sluice } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop, redisCpuSeconds, type LoadResult } from './lib/load.js';
import { BENCH_ALGORITHMS, BENCH_POLICIES, identityOf } from './lib/policies.js';
import { expandedLua, redisBenchmark, scriptCall, type RawResult } from './lib/raw-benchmark.js';

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '1.5' },
    warmup: { type: 'string', default: '0.3' },
    concurrency: { type: 'string', default: '1,64,512' },
    keys: { type: 'string', default: '1,100000' },
    algorithms: { type: 'string', default: BENCH_ALGORITHMS.join(',') },
    autopipe: { type: 'string', default: '1,0' },
    raw: { type: 'string', default: '1' },
    reps: { type: 'string', default: '1' },
  },
});
const nums = (s: string) => s.split(',').map(Number);
const durationMs = Number(flags.duration) * 1000;
const warmupMs = Number(flags.warmup) * 1000;
const concurrencies = nums(flags.concurrency);
const keySets = nums(flags.keys);
const algorithms = flags.algorithms.split(',') as Algorithm[];
const autopipes = nums(flags.autopipe).map(Boolean);
const reps = Number(flags.reps);
if (durationMs <= 0 || durationMs > 60_000) throw new Error('--duration: seconds in (0, 60]');
for (const a of algorithms) if (!BENCH_POLICIES[a]) throw new Error(`--algorithms: unknown '${a}'`);

const log = (msg: string) => process.stderr.write(`[decisions ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
// A hard stop, whatever hangs: the run is bounded in time.
const budgetMs = reps * autopipes.length * algorithms.length * keySets.length * concurrencies.length * (durationMs + warmupMs + 1_000) + 300_000;
setTimeout(() => {
  log(`watchdog: still running after ${budgetMs} ms, exiting`);
  process.exit(124);
}, budgetMs).unref();

interface Row extends LoadResult {
  algorithm: Algorithm;
  autopipe: boolean;
  keys: number;
  concurrency: number;
  nodeUsPerOp: number;
  redisUsPerOp: number;
}

/** One measured call: a decision; for concurrency an acquire and its release (two round trips). */
function operation(limiter: Limiter, keys: number): () => Promise<unknown> {
  const next = identityOf(keys);
  if (limiter.policy.algorithm !== 'concurrency') return () => limiter.limit(next());
  return async () => {
    const key = next();
    const d = await limiter.limit(key);
    if (d.leaseId) await limiter.release(key, d.leaseId);
  };
}

const server = await startRedis();
log(`redis-server on ${server.port}`);
const sluices = new Map<boolean, Sluice>();
const rows: Row[] = [];
const raw: RawResult[] = [];
try {
  for (const ap of autopipes) {
    sluices.set(ap, createSluice({ redis: server.url, prefix: 'bench', redisOptions: { enableAutoPipelining: ap } }));
  }
  const monitor = createSluice({ redis: server.url, prefix: 'benchmon' }).redis;
  const info = () => monitor.info('cpu');

  for (let rep = 0; rep < reps; rep++) {
    for (const ap of autopipes) {
      for (const algorithm of algorithms) {
        const limiter = sluices.get(ap)!.limiter(BENCH_POLICIES[algorithm]);
        for (const keys of keySets) {
          for (const concurrency of concurrencies) {
            const op = operation(limiter, keys);
            if (warmupMs > 0) await closedLoop(op, concurrency, warmupMs);
            const c0 = process.cpuUsage();
            const r0 = await redisCpuSeconds(info);
            const r = await closedLoop(op, concurrency, durationMs);
            const c1 = process.cpuUsage(c0);
            const r1 = await redisCpuSeconds(info);
            const row: Row = {
              algorithm,
              autopipe: ap,
              keys,
              concurrency,
              ...r,
              nodeUsPerOp: Math.round(((c1.user + c1.system) / r.ops) * 10) / 10,
              redisUsPerOp: Math.round((((r1 - r0) * 1e6) / r.ops) * 10) / 10,
            };
            rows.push(row);
            log(`${algorithm} autopipe=${ap ? 1 : 0} keys=${keys} c=${concurrency}: ${r.opsPerSec}/s p50 ${r.p50Ms} ms p99 ${r.p99Ms} ms (node ${row.nodeUsPerOp} µs, redis ${row.redisUsPerOp} µs per op)`);
          }
        }
      }
    }
  }

  if (flags.raw === '1') {
    // The same scripts straight from redis-benchmark: what the server alone can do.
    const s = sluices.values().next().value!;
    for (const algorithm of algorithms) {
      const policy = BENCH_POLICIES[algorithm];
      const { script, args } = scriptCall(policy);
      const sha = (await monitor.script('LOAD', expandedLua(script))) as string;
      const limiter = s.limiter(policy);
      for (const keys of ['hot', 'rand'] as const) {
        const key = limiter.keyOf(keys === 'hot' ? 'hot' : 'u__rand_int__');
        for (const pipeline of [1, 16]) {
          const requests = pipeline === 1 ? 60_000 : 300_000;
          const r = await redisBenchmark({ port: server.port, sha, script, key, args, keys, clients: 50, pipeline, requests });
          raw.push(r);
          log(`raw ${script} ${keys} -c 50 -P ${pipeline}: ${r.rps}/s`);
        }
      }
    }
  }
  monitor.disconnect();
} finally {
  for (const s of sluices.values()) await s.close();
  await server.dispose();
}

/** Median over reps of one cell. */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}
const cells = new Map<string, Row[]>();
for (const r of rows) {
  const k = `${r.algorithm}|${r.autopipe}|${r.keys}|${r.concurrency}`;
  cells.set(k, [...(cells.get(k) ?? []), r]);
}
const results = [...cells.values()].map((runs) => {
  const first = runs[0]!;
  const script = scriptCall(BENCH_POLICIES[first.algorithm]).script;
  const rawKeys = first.keys === 1 ? 'hot' : 'rand';
  const ceiling = (p: number) => raw.find((x) => x.script === script && x.keys === rawKeys && x.pipeline === p)?.rps;
  const opsPerSec = median(runs.map((r) => r.opsPerSec));
  const ratio = (c: number | undefined) => (c ? Math.round((opsPerSec / c) * 1000) / 1000 : null);
  return {
    algorithm: first.algorithm,
    autopipe: first.autopipe,
    keys: first.keys,
    concurrency: first.concurrency,
    opsPerSec,
    p50Ms: median(runs.map((r) => r.p50Ms)),
    p99Ms: median(runs.map((r) => r.p99Ms)),
    maxMs: Math.max(...runs.map((r) => r.maxMs)),
    nodeUsPerOp: median(runs.map((r) => r.nodeUsPerOp)),
    redisUsPerOp: median(runs.map((r) => r.redisUsPerOp)),
    errors: runs.reduce((n, r) => n + r.errors, 0),
    ratioToRawP1: ratio(ceiling(1)),
    ratioToRawP16: ratio(ceiling(16)),
  };
});

process.stdout.write(
  JSON.stringify(
    {
      benchmark: 'decisions',
      at: new Date().toISOString(),
      machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100) },
      options: { durationS: durationMs / 1000, warmupS: warmupMs / 1000, reps, concurrencies, keySets, autopipes },
      notes: [
        'one Node process, closed loop with N calls in flight; every call allowed (huge limits)',
        'concurrency rows: one op = acquire + release (two round trips); its raw row is the acquire script alone',
        'raw: redis-benchmark -c 50, EVALSHA of the expanded script with the arguments a limit() call sends; ratios = sluice ops/s / raw rps for the same keys',
      ],
      results,
      raw,
    },
    null,
    2,
  ) + '\n',
);
