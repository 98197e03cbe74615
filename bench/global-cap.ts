// The global cap under multi-tenant load (issue 13): heavy and light keys share one throttle's global
// cap, worker processes (test/helpers/throttle-proc.ts) record every handler start, and the run is
// measured against the ideal schedule: the reference model (src/throttle/dispatch.model.ts) fed the
// same submits at the same instants, with no delivery time. Reports achieved rate / cap while demand
// exceeds the cap, the most starts in any 1 s, Jain's index of per-key starts against the ideal's over
// that period, light keys' first-start and all-start waits (p50/p99) against the ideal's, and the
// makespan against the ideal's. With --bullmq, the same jobs through BullMQ with a queue-wide limiter
// at the cap (no fairness) for comparison. A private redis-server, started and stopped here.
//   npx tsx bench/global-cap.ts [--heavy 10] [--heavy-jobs 200] [--light 190] [--light-jobs 5] [--cap 200]
//     [--lane-rate 50] [--capacity 1000] [--procs 2] [--concurrency 10] [--timeout 90] [--bullmq]
// Prints one JSON document on stdout; progress goes to stderr.
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createSluice } from '../src/index.js';
import { DispatchModel } from '../src/throttle/dispatch.model.js';
import { timingOf, parseThrottleConfig } from '../src/throttle/config.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { ThrottleProc, jain } from '../test/helpers/throttle-procs.js';
import { maxInWindow, quantile } from '../test/helpers/throttle-stats.js';

const { values: flags } = parseArgs({
  options: {
    heavy: { type: 'string', default: '10' },
    'heavy-jobs': { type: 'string', default: '200' },
    light: { type: 'string', default: '190' },
    'light-jobs': { type: 'string', default: '5' },
    cap: { type: 'string', default: '200' },
    'lane-rate': { type: 'string', default: '50' },
    capacity: { type: 'string', default: '1000' },
    procs: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '10' },
    timeout: { type: 'string', default: '90' },
    seed: { type: 'string', default: '1' },
    bullmq: { type: 'boolean', default: false },
  },
});
const n = (k: keyof typeof flags) => Number(flags[k]);
const cap = n('cap');
const laneRate = n('lane-rate');
const config = { ratePerSecond: laneRate, capacity: n('capacity'), globalRatePerSecond: cap };
const log = (msg: string) => process.stderr.write(`${msg}\n`);
const r3 = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);

interface Job {
  key: string;
  heavy: boolean;
  submitted?: number;
  start?: number;
}

/** Deterministic shuffle (mulberry32). */
function shuffle<T>(xs: T[], seed: number): T[] {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

function makeJobs(): Job[] {
  const jobs: Job[] = [];
  for (let k = 0; k < n('heavy'); k++) for (let i = 0; i < n('heavy-jobs'); i++) jobs.push({ key: `heavy-${k}`, heavy: true });
  for (let k = 0; k < n('light'); k++) for (let i = 0; i < n('light-jobs'); i++) jobs.push({ key: `light-${k}`, heavy: false });
  return shuffle(jobs, n('seed'));
}

/** The ideal schedule of the same submits: the model with no delivery time and no horizon. */
function idealStarts(jobs: Job[]): Map<Job, number> {
  const t = timingOf(parseThrottleConfig('ideal', config));
  const model = new DispatchModel({ globalIntervalUs: t.globalIntervalUs, marginPpm: t.marginPpm });
  const arrivals = jobs.map((j, i) => ({ j, id: `p${i}`, at: Math.round(j.submitted! * 1000) })).sort((a, b) => a.at - b.at);
  const byId = new Map(arrivals.map((a) => [a.id, a.j]));
  const out = new Map<Job, number>();
  let i = 0;
  let now = arrivals[0]!.at;
  let next = 0;
  while (out.size < jobs.length) {
    while (i < arrivals.length && arrivals[i]!.at <= now) {
      const a = arrivals[i++]!;
      model.admit(now, a.j.key, a.id, 1, config.capacity, t.laneIntervalUs, 0);
    }
    const r = model.dispatch(now, 0, 0, 1_000_000);
    for (const d of r.jobs) out.set(byId.get(d.jobId)!, d.startUs / 1000);
    next = r.nextUs;
    const candidates = [next > now ? next : Infinity, i < arrivals.length ? arrivals[i]!.at : Infinity];
    const to = Math.min(...candidates);
    if (to === Infinity) break;
    now = to;
  }
  return out;
}

/** The instant after which fewer keys have work left than it takes to fill the cap. */
function contendedUntil(starts: { key: string; t: number }[]): number {
  const last = new Map<string, number>();
  for (const s of starts) last.set(s.key, Math.max(last.get(s.key) ?? 0, s.t));
  const ends = [...last.values()].sort((a, b) => b - a);
  const fill = Math.ceil(cap / laneRate);
  return ends[Math.min(ends.length - 1, fill - 1)]!;
}

function report(jobs: Job[], startOf: (j: Job) => number | undefined, ideal: Map<Job, number>) {
  const started = jobs.filter((j) => startOf(j) !== undefined);
  const starts = started.map((j) => ({ key: j.key, t: startOf(j)! })).sort((a, b) => a.t - b.t);
  const first = starts[0]!.t;
  const until = contendedUntil(starts);
  const inPeriod = starts.filter((s) => s.t >= first && s.t <= until);
  const idealIn = new Map<string, number>();
  for (const [j, t] of ideal) if (t >= first && t <= until) idealIn.set(j.key, (idealIn.get(j.key) ?? 0) + 1);
  const actualIn = new Map<string, number>();
  for (const s of inPeriod) actualIn.set(s.key, (actualIn.get(s.key) ?? 0) + 1);
  const ratios = [...idealIn.entries()].map(([k, want]) => (actualIn.get(k) ?? 0) / want);
  const light = jobs.filter((j) => !j.heavy);
  const wait = (j: Job, t: number | undefined) => (t === undefined ? Infinity : t - j.submitted!);
  const sortedWaits = (f: (j: Job) => number) => light.map(f).sort((a, b) => a - b);
  const firstOf = (f: (j: Job) => number | undefined) => {
    const firsts = new Map<string, number>();
    for (const j of light) firsts.set(j.key, Math.min(firsts.get(j.key) ?? Infinity, wait(j, f(j))));
    return [...firsts.values()].sort((a, b) => a - b);
  };
  const actualWaits = sortedWaits((j) => wait(j, startOf(j)));
  const idealWaits = sortedWaits((j) => wait(j, ideal.get(j)));
  const submittedFirst = Math.min(...jobs.map((j) => j.submitted!));
  const makespan = Math.max(...started.map((j) => startOf(j)!)) - submittedFirst;
  const idealMakespan = Math.max(...ideal.values()) - submittedFirst;
  return {
    started: started.length,
    jobs: jobs.length,
    contendedSeconds: r3((until - first) / 1000),
    achievedOverCap: r3((inPeriod.length - 1) / ((until - first) / 1000) / cap),
    maxIn1s: maxInWindow(starts.map((s) => s.t), 1000),
    jainVsIdeal: r3(jain(ratios)),
    lightWaitMs: { p50: r3(quantile(actualWaits, 0.5)), p99: r3(quantile(actualWaits, 0.99)) },
    lightWaitIdealMs: { p50: r3(quantile(idealWaits, 0.5)), p99: r3(quantile(idealWaits, 0.99)) },
    lightFirstStartMs: { p50: r3(quantile(firstOf(startOf), 0.5)), p99: r3(quantile(firstOf(startOf), 0.99)) },
    lightFirstStartIdealMs: { p50: r3(quantile(firstOf((j) => ideal.get(j)), 0.5)), p99: r3(quantile(firstOf((j) => ideal.get(j)), 0.99)) },
    makespanOverIdeal: r3(makespan / idealMakespan),
    startsPerSecond: perSecond(starts.map((s) => s.t), submittedFirst),
    idealStartsPerSecond: perSecond([...ideal.values()], submittedFirst),
  };
}

/** Starts in each whole second after `from`. */
function perSecond(times: number[], from: number): number[] {
  const out: number[] = [];
  for (const t of times) {
    const i = Math.floor((t - from) / 1000);
    while (out.length <= i) out.push(0);
    out[i]!++;
  }
  return out;
}

async function submitAll(jobs: Job[], submit: (j: Job) => Promise<void>, inFlight = 32): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < jobs.length) {
        const j = jobs[next++]!;
        j.submitted = performance.timeOrigin + performance.now();
        await submit(j);
      }
    }),
  );
}

async function runSluice(url: string) {
  const jobs = makeJobs();
  const prefix = `gc${Date.now()}`;
  const backend = { target: url } as never;
  const procs = await Promise.all(Array.from({ length: n('procs') }, () => ThrottleProc.start(backend, prefix, 'cap', config)));
  await Promise.all(procs.map((p) => p.worker(n('concurrency'))));
  const sluice = createSluice({ redis: url, prefix });
  const throttle = sluice.throttle('cap', config);
  const byId = new Map<string, Job>();
  log(`sluice: submitting ${jobs.length} jobs`);
  await submitAll(jobs, async (j) => {
    const r = await throttle.submit(j.key, { k: j.key });
    if (!r.admitted) throw new Error(`refused: ${JSON.stringify(r)}`);
    byId.set(r.jobId, j);
  });
  const deadline = Date.now() + n('timeout') * 1000;
  const count = () => procs.reduce((a, p) => a + p.starts.length, 0);
  while (count() < jobs.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  for (const p of procs) for (const s of p.starts) byId.get(s.id)!.start = s.t;
  await Promise.all(procs.map((p) => p.close()));
  await sluice.close();
  return { jobs, report: report(jobs, (j) => j.start, idealStarts(jobs)) };
}

async function runBullmq(port: number) {
  const jobs = makeJobs();
  const connection = { host: '127.0.0.1', port };
  const queue = new Queue('bull-cap', { connection });
  const starts = new Map<string, number>();
  const workers = Array.from(
    { length: n('procs') },
    () =>
      new Worker(
        'bull-cap',
        async (job) => {
          starts.set(job.id!, performance.timeOrigin + performance.now());
        },
        { connection, concurrency: n('concurrency'), limiter: { max: cap, duration: 1000 } },
      ),
  );
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  const byId = new Map<string, Job>();
  log(`bullmq: submitting ${jobs.length} jobs`);
  let id = 0;
  await submitAll(jobs, async (j) => {
    const jobId = `b${id++}`;
    byId.set(jobId, j);
    await queue.add('j', { k: j.key }, { jobId, removeOnComplete: true });
  });
  const deadline = Date.now() + n('timeout') * 1000;
  while (starts.size < jobs.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  for (const [jobId, t] of starts) byId.get(jobId)!.start = t;
  await Promise.all(workers.map((w) => w.close()));
  await queue.close();
  return report(jobs, (j) => j.start, idealStarts(jobs));
}

const redis = await startRedis();
try {
  const scenario = {
    heavyKeys: n('heavy'),
    heavyJobs: n('heavy-jobs'),
    lightKeys: n('light'),
    lightJobs: n('light-jobs'),
    cap,
    laneRate,
    capacity: config.capacity,
    workerProcesses: n('procs'),
    concurrency: n('concurrency'),
  };
  const sluice = await runSluice(redis.url);
  const raw = new Redis(redis.port, '127.0.0.1');
  await raw.flushall();
  raw.disconnect();
  const bullmq = flags.bullmq ? await runBullmq(redis.port) : undefined;
  process.stdout.write(`${JSON.stringify({ bench: 'global-cap', at: new Date().toISOString(), scenario, sluice: sluice.report, ...(bullmq ? { bullmqLimiter: bullmq } : {}) }, null, 2)}\n`);
} finally {
  await redis.dispose();
}
