// Throttle admissions per second from ONE Node process (submit = admission script, batched per event-loop
// turn, + BullMQ add), next to BullMQ's bare queue.add of the same payload on the same private
// redis-server in the same run, with the ratio; the machine's load average before and after is recorded.
//   npx tsx bench/throttle-admit.ts [--duration 3] [--inflight 1,64] [--reps 3] [--keys 100000] [--max-ops 60000] [--base DIR]
// --base DIR: another checkout of sluice (node_modules in place, e.g. /work/main): its src/ is imported here
// and its lua/ loaded by its own registry, and its two cases (base-hot, base-many) run in the same reps on
// the same redis-server, so before/after come from the same minutes.
// Cases, interleaved rep by rep so that the ratios come from the same minutes:
//   sluice-hot   one key, capacity 10,000,000 (never full), 1,000/s: jobs are delayed BullMQ jobs
//   sluice-many  `--keys` distinct keys picked at random, 10/s each, capacity 100
//   bullmq-add   queue.add(name, data) with no options (the peer-bench anchor)
//   bullmq-delay queue.add with a 60 s delay (what a throttle admission adds to BullMQ)
// Prints one JSON document on stdout; progress goes to stderr.
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createSluice, type Throttle } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop, redisCpuSeconds, type LoadResult } from './lib/load.js';

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '3' },
    inflight: { type: 'string', default: '1,64' },
    reps: { type: 'string', default: '3' },
    keys: { type: 'string', default: '100000' },
    'max-ops': { type: 'string', default: '60000' },
    base: { type: 'string' },
  },
});
const durationMs = Number(flags.duration) * 1000;
const inflights = flags.inflight.split(',').map(Number);
const reps = Number(flags.reps);
const manyKeys = Number(flags.keys);
const maxOps = Number(flags['max-ops']);
if (!(durationMs > 0 && durationMs <= 30_000)) throw new Error('--duration: seconds in (0, 30]');
if (!(maxOps >= 100 && maxOps <= 1_000_000)) throw new Error('--max-ops: 100 .. 1000000');
if (!(manyKeys >= 2 && manyKeys <= 1_000_000)) throw new Error('--keys: 2 .. 1000000');

const log = (msg: string) => process.stderr.write(`[throttle-admit ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const budgetMs = reps * inflights.length * 6 * (durationMs + 3_000) + 120_000;
setTimeout(() => {
  log(`watchdog: still running after ${budgetMs} ms, exiting`);
  process.exit(124);
}, budgetMs).unref();

type CaseName = 'sluice-hot' | 'sluice-many' | 'bullmq-add' | 'bullmq-delay' | 'base-hot' | 'base-many';
const CASES: CaseName[] = ['sluice-hot', 'sluice-many', 'bullmq-add', 'bullmq-delay', ...(flags.base ? (['base-hot', 'base-many'] as const) : [])];

interface Row extends LoadResult {
  case: CaseName;
  inflight: number;
  rep: number;
  redisUsPerOp: number;
  nodeUsPerOp: number;
}

const server = await startRedis();
const raw = new Redis(server.port, '127.0.0.1');
const sluice = createSluice({ redis: server.url, prefix: 'bench' });
// Generous deadline: the bench measures throughput, not the 2 s production deadline on a loaded machine.
const hot = sluice.throttle('hot', { ratePerSecond: 1000, capacity: 10_000_000, submitTimeoutMs: 30_000 });
const many = sluice.throttle('many', { ratePerSecond: 10, capacity: 100, submitTimeoutMs: 30_000 });
// The --base checkout's sluice, the same two throttles under its own prefix.
type Index = typeof import('../src/index.js');
const baseSluice = flags.base
  ? ((await import(pathToFileURL(join(flags.base, 'src/index.ts')).href)) as Index).createSluice({ redis: server.url, prefix: 'bench-base' })
  : undefined;
const baseHot = baseSluice?.throttle('hot', { ratePerSecond: 1000, capacity: 10_000_000, submitTimeoutMs: 30_000 });
const baseMany = baseSluice?.throttle('many', { ratePerSecond: 10, capacity: 100, submitTimeoutMs: 30_000 });
// BullMQ on its own connection, as a user of bare BullMQ would have it.
const bullConnection = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: null });
const bullQueue = new Queue('bare', { connection: bullConnection, prefix: 'bull' });
await bullQueue.waitUntilReady();

let seq = 0;
const operations: Record<CaseName, () => Promise<unknown>> = {
  'sluice-hot': () => admitted(hot, 'hot'),
  'sluice-many': () => admitted(many, `u${(Math.random() * manyKeys) | 0}`),
  'bullmq-add': () => bullQueue.add('j', { i: seq++ }),
  'bullmq-delay': () => bullQueue.add('j', { i: seq++ }, { delay: 60_000 }),
  'base-hot': () => admitted(baseHot!, 'hot'),
  'base-many': () => admitted(baseMany!, `u${(Math.random() * manyKeys) | 0}`),
};

async function admitted(t: Pick<Throttle, 'submit'>, key: string): Promise<void> {
  const r = await t.submit(key, { i: seq++ });
  // A refusal is a different (cheaper) path: count it as an error so it never inflates the figure.
  if (!r.admitted) throw new Error(`refused: ${r.reason}`);
}

/** Deletes every key the cases wrote (SCAN by the bench's own prefixes), so each case starts from the same Redis size. */
async function clean(): Promise<void> {
  for (const pattern of ['bench:*', 'bench-base:*', 'bull:*']) {
    let cursor = '0';
    do {
      const [next, keys] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 5000);
      cursor = next;
      if (keys.length) await raw.unlink(...keys);
    } while (cursor !== '0');
  }
}

const rows: Row[] = [];
const loadBefore = loadavg().map((x) => Math.round(x * 100) / 100);
try {
  // Warm up: scripts loaded, queues created, JIT warm.
  for (const c of CASES) await closedLoop(operations[c], 16, 500, 2_000);
  await clean();
  for (let rep = 0; rep < reps; rep++) {
    for (const inflight of inflights) {
      for (const c of CASES) {
        const cpu0 = await redisCpuSeconds(() => raw.info('cpu'));
        const node0 = process.cpuUsage();
        const r = await closedLoop(operations[c], inflight, durationMs, maxOps);
        const node = process.cpuUsage(node0);
        const cpu1 = await redisCpuSeconds(() => raw.info('cpu'));
        const row: Row = {
          case: c,
          inflight,
          rep,
          ...r,
          redisUsPerOp: Math.round(((cpu1 - cpu0) * 1e6) / Math.max(1, r.ops)),
          nodeUsPerOp: Math.round((node.user + node.system) / Math.max(1, r.ops)),
        };
        rows.push(row);
        log(`${c} @${inflight} rep ${rep}: ${r.opsPerSec}/s p99 ${r.p99Ms} ms errors ${r.errors}`);
        await clean();
      }
    }
  }
} finally {
  await bullQueue.close();
  bullConnection.disconnect();
  await sluice.close();
  await baseSluice?.close();
  raw.disconnect();
  await server.dispose();
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const summary = inflights.flatMap((inflight) => {
  const of = (c: CaseName) => rows.filter((r) => r.case === c && r.inflight === inflight);
  const perSec = (c: CaseName) => median(of(c).map((r) => r.opsPerSec));
  // The ratio is taken inside each rep (the same minute of a noisy machine), then the median over reps.
  const ratios = (c: CaseName) => of(c).map((r) => r.opsPerSec / of('bullmq-add').find((b) => b.rep === r.rep)!.opsPerSec);
  const r2 = (x: number) => Math.round(x * 100) / 100;
  return CASES.map((c) => ({
    case: c,
    inflight,
    admitsPerSec: Math.round(perSec(c)),
    admitsPerSecMinMax: [Math.min(...of(c).map((r) => r.opsPerSec)), Math.max(...of(c).map((r) => r.opsPerSec))],
    p50Ms: median(of(c).map((r) => r.p50Ms)),
    p99Ms: median(of(c).map((r) => r.p99Ms)),
    redisUsPerOp: median(of(c).map((r) => r.redisUsPerOp)),
    nodeUsPerOp: median(of(c).map((r) => r.nodeUsPerOp)),
    vsBullmqAdd: r2(median(ratios(c))),
    vsBullmqAddMinMax: [r2(Math.min(...ratios(c))), r2(Math.max(...ratios(c)))],
    errors: of(c).reduce((n, r) => n + r.errors, 0),
  }));
});
process.stdout.write(
  JSON.stringify(
    {
      bench: 'throttle-admit',
      at: new Date().toISOString(),
      loadAverage: { before: loadBefore, after: loadavg().map((x) => Math.round(x * 100) / 100) },
      durationS: durationMs / 1000,
      reps,
      manyKeys,
      cases: {
        'sluice-hot': 'one key, ratePerSecond 1000, capacity 10,000,000',
        'sluice-many': `${manyKeys} random keys, ratePerSecond 10, capacity 100`,
        'bullmq-add': 'queue.add(name, data), no options',
        'bullmq-delay': 'queue.add(name, data, { delay: 60000 })',
        ...(flags.base ? { 'base-hot': `sluice-hot on ${flags.base}`, 'base-many': `sluice-many on ${flags.base}` } : {}),
      },
      summary,
      rows,
    },
    null,
    2,
  ) + '\n',
);
