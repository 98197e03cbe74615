// A backlog drained as fast as one worker process can: `--jobs` jobs over `--lanes` lanes whose own rate
// (`--rate` per second each, no global cap) is never the limit, all admitted before the worker starts;
// then one in-process sluice worker (its dispatcher, `--concurrency` handlers, a no-op handler) drains
// them. Next to it, in the same reps, BullMQ's bare Worker draining the same number of jobs added with
// addBulk (no throttle: the floor of what a job costs in BullMQ), and with --base DIR the same sluice
// case on another checkout (its src/ and lua/). Each run has a private redis-server of its own.
// Per run: jobs per second over the drain, this process's CPU (user + sys) and Redis's per job, Redis
// commands per job (INFO commandstats, inside scripts too) and the jobs sent back to their lane per job
// (a worker that came too late for a start and could not take another: parked, put back, handed out
// and fetched again).
//   npx tsx bench/backlog-drain.ts [--jobs 20000] [--lanes 4000] [--rate 1000] [--concurrency 20] [--reps 2] [--base DIR]
// Prints one JSON document on stdout; progress goes to stderr.
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import * as here from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { redisCpuSeconds } from './lib/load.js';

const { values: flags } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    lanes: { type: 'string', default: '4000' },
    rate: { type: 'string', default: '1000' },
    concurrency: { type: 'string', default: '20' },
    reps: { type: 'string', default: '2' },
    base: { type: 'string' },
  },
});
const jobs = Number(flags.jobs);
const lanes = Number(flags.lanes);
const rate = Number(flags.rate);
const concurrency = Number(flags.concurrency);
const reps = Number(flags.reps);
if (!(jobs >= 100 && jobs <= 200_000)) throw new Error('--jobs: 100 .. 200000');
if (!(lanes >= 1 && lanes <= jobs)) throw new Error('--lanes: 1 .. --jobs');
if (!(reps >= 1 && reps <= 10)) throw new Error('--reps: 1 .. 10');

const log = (msg: string) => process.stderr.write(`[backlog-drain ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
setTimeout(() => {
  log('watchdog: still running, exiting');
  process.exit(124);
}, 15 * 60_000).unref();

type Index = typeof here;
const base = flags.base ? ((await import(pathToFileURL(join(flags.base, 'src/index.ts')).href)) as Index) : undefined;

interface Run {
  case: string;
  rep: number;
  jobsPerSec: number;
  nodeUsPerJob: number;
  redisUsPerJob: number;
  redisCommandsPerJob: number;
  handBacksPerJob: number | null;
}

/** Redis commands run so far (INFO commandstats: calls inside scripts count too). */
async function commands(raw: Redis): Promise<number> {
  return [...(await raw.info('commandstats')).matchAll(/calls=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
}

/** Measures the drain: from the first handler call to the last, this process's and Redis's CPU. */
function drainMeter(raw: Redis) {
  let first: { at: number; cpu: NodeJS.CpuUsage; redis: Promise<number>; calls: Promise<number> } | undefined;
  let done = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  return {
    handler: async () => {
      first ??= { at: performance.now(), cpu: process.cpuUsage(), redis: redisCpuSeconds(() => raw.info('cpu')), calls: commands(raw) };
      if (++done === jobs) finish();
    },
    /** `handBacks`: the jobs sent back so far, read once the drain is over (null: not counted). */
    async result(name: string, rep: number, handBacks: () => number | null): Promise<Run> {
      await finished;
      const elapsedS = (performance.now() - first!.at) / 1000;
      const cpu = process.cpuUsage(first!.cpu);
      const redis = (await redisCpuSeconds(() => raw.info('cpu'))) - (await first!.redis);
      const calls = (await commands(raw)) - (await first!.calls);
      const sentBack = handBacks();
      return {
        case: name,
        rep,
        jobsPerSec: Math.round(jobs / elapsedS),
        nodeUsPerJob: Math.round((cpu.user + cpu.system) / jobs),
        redisUsPerJob: Math.round((redis * 1e6) / jobs),
        redisCommandsPerJob: Math.round((calls / jobs) * 10) / 10,
        handBacksPerJob: sentBack === null ? null : Math.round((sentBack / jobs) * 1000) / 1000,
      };
    },
  };
}

async function sluiceRun(name: string, index: Index, rep: number): Promise<Run> {
  const server = await startRedis();
  const raw = new Redis(server.url);
  let handBacks = 0;
  const sluice = index.createSluice({ redis: server.url, prefix: 'drain', observer: { onDecision: () => undefined, onDefer: () => void handBacks++ } });
  try {
    const throttle = sluice.throttle('drain', { ratePerSecond: rate, capacity: 1_000_000, keepCompleted: { ageSeconds: 1, count: 0 } });
    await throttle.ready();
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < jobs; i++) {
      pending.push(throttle.submit(`k${i % lanes}`, { sku: 'A1', qty: i }));
      if (pending.length === 500) await Promise.all(pending.splice(0));
    }
    await Promise.all(pending);
    const meter = drainMeter(raw);
    const worker = sluice.worker('drain', meter.handler, { concurrency });
    const run = await meter.result(name, rep, () => handBacks);
    await worker.close();
    return run;
  } finally {
    await sluice.close();
    raw.disconnect();
    await server.dispose();
  }
}

async function bullRun(rep: number): Promise<Run> {
  const server = await startRedis();
  const raw = new Redis(server.url);
  // BullMQ leaves the connections it is given open: closed here, before the server goes.
  const connections: Redis[] = [];
  const connection = () => connections[connections.push(new Redis(server.url, { maxRetriesPerRequest: null })) - 1]!;
  const queue = new Queue('drain', { connection: connection() });
  try {
    for (let i = 0; i < jobs; i += 1000) {
      await queue.addBulk(Array.from({ length: Math.min(1000, jobs - i) }, (_, j) => ({ name: 'drain', data: { sku: 'A1', qty: i + j }, opts: { removeOnComplete: true } })));
    }
    const meter = drainMeter(raw);
    const worker = new Worker('drain', meter.handler, { connection: connection(), concurrency });
    const run = await meter.result('bullmq-worker', rep, () => null);
    await worker.close();
    return run;
  } finally {
    await queue.close();
    for (const c of connections) c.disconnect();
    raw.disconnect();
    await server.dispose();
  }
}

const loadBefore = loadavg();
const runs: Run[] = [];
for (let rep = 0; rep < reps; rep++) {
  for (const name of ['sluice', ...(base ? ['base'] : []), 'bullmq-worker']) {
    const run = name === 'sluice' ? await sluiceRun(name, here, rep) : name === 'base' ? await sluiceRun(name, base!, rep) : await bullRun(rep);
    log(`${name} rep ${rep}: ${run.jobsPerSec} jobs/s, node ${run.nodeUsPerJob} µs/job, redis ${run.redisUsPerJob} µs/job, ${run.redisCommandsPerJob} commands/job, hand-backs ${run.handBacksPerJob}/job`);
    runs.push(run);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const summary = [...new Set(runs.map((r) => r.case))].map((name) => {
  const rs = runs.filter((r) => r.case === name);
  return {
    case: name,
    jobsPerSec: median(rs.map((r) => r.jobsPerSec)),
    jobsPerSecMinMax: [Math.min(...rs.map((r) => r.jobsPerSec)), Math.max(...rs.map((r) => r.jobsPerSec))],
    nodeUsPerJob: median(rs.map((r) => r.nodeUsPerJob)),
    redisUsPerJob: median(rs.map((r) => r.redisUsPerJob)),
    redisCommandsPerJob: median(rs.map((r) => r.redisCommandsPerJob)),
    handBacksPerJob: rs[0]!.handBacksPerJob === null ? null : median(rs.map((r) => r.handBacksPerJob!)),
  };
});
process.stdout.write(
  JSON.stringify(
    {
      bench: 'backlog-drain',
      at: new Date().toISOString(),
      loadAverage: { before: loadBefore, after: loadavg() },
      settings: { jobs, lanes, ratePerSecond: rate, concurrency, reps, ...(flags.base ? { base: flags.base } : {}) },
      cases: {
        sluice: `this tree: ${jobs} jobs over ${lanes} lanes at ${rate}/s each, admitted first, then one in-process worker (concurrency ${concurrency})`,
        ...(base ? { base: `the same on ${flags.base}` } : {}),
        'bullmq-worker': `BullMQ's Worker (concurrency ${concurrency}) on ${jobs} jobs added with addBulk, no throttle`,
      },
      summary,
      runs,
    },
    null,
    1,
  ) + '\n',
);
process.exit(0);
