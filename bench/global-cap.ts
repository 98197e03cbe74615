// The global cap under multi-tenant load (issue 13): heavy and light keys share one throttle's global
// cap, worker processes (test/helpers/throttle-proc.ts) record every handler start, and the run is
// measured against the ideal schedule: the reference model (src/throttle/dispatch.model.ts) fed the
// same submits at the same instants, with no delivery time. Reports achieved rate / cap while demand
// exceeds the cap, the most starts in any 1 s, Jain's index of per-key starts against the ideal's over
// that period, light keys' first-start and all-start waits (p50/p99) against the ideal's, and the
// makespan against the ideal's, the CPU of each process per second and per job over the whole run
// (`cpuUsPerJob`: the workers together, Redis, the submitter), Redis commands per job (INFO
// commandstats: inside scripts too), Redis µs per job inside sluice's and BullMQ's scripts and Redis socket
// reads per job (INFO stats). With --bullmq, the same
// jobs through BullMQ with a queue-wide limiter
// at the cap (no fairness) for comparison. A private redis-server, started and stopped here; with
// --masters 3, a private 3-master cluster and the throttle split into --shards shards (default: one per
// master; docs/algorithms.md, "A throttle across a cluster"): the cap divided among the shards by demand,
// measured against the same ideal (one gate over every lane), Redis CPU and commands per master.
//   npx tsx bench/global-cap.ts [--heavy 10] [--heavy-jobs 200] [--light 190] [--light-jobs 5] [--cap 200]
//     [--lane-rate 50] [--capacity 1000] [--procs 2] [--concurrency 10] [--duration MS] [--timeout 90] [--bullmq] [--dump jobs.json] [--cold]
//     [--masters 1|3..9] [--shards N]
//     [--warm-jobs N: N jobs through the workers first, not counted: workers that have been running a while]
//     [--collect-at-start: the workers' start-up collections as soon as they have started, as `sluice worker` runs them]
// Prints one JSON document on stdout; progress goes to stderr.
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createSluice } from '../src/index.js';
import { capJobs, capReport, submitAll, type CapJob } from '../test/helpers/global-cap.js';
import { startCluster, startRedis } from '../test/helpers/redis-server.js';
import { ThrottleProc } from '../test/helpers/throttle-procs.js';
import { cpuSeconds } from './lib/proc-cpu.js';

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
    // Each handler runs this many ms (0: returns at once); handlers slower than the cap make them the bottleneck.
    duration: { type: 'string', default: '0' },
    timeout: { type: 'string', default: '90' },
    seed: { type: 'string', default: '1' },
    bullmq: { type: 'boolean', default: false },
    // Writes every job's key, submit and start instants and the start instant it was given (slot) (ms) as JSON,
    // for a closer look at a run: starts missing where slots are missing were never handed out.
    dump: { type: 'string' },
    cold: { type: 'boolean', default: false },
    // Jobs run through the workers before the measured submits (their starts not counted): workers that
    // have been running a while (a burst onto a running service), not processes started just before it.
    'warm-jobs': { type: 'string', default: '0' },
    // The workers run their start-up collections as soon as they have started (the worker option collectAtStart, as `sluice worker` does).
    'collect-at-start': { type: 'boolean', default: false },
    masters: { type: 'string', default: '1' },
    shards: { type: 'string' },
  },
});
const n = (k: keyof typeof flags) => Number(flags[k]);
const cap = n('cap');
const laneRate = n('lane-rate');
const masters = n('masters');
const shards = flags.shards === undefined ? masters : n('shards');
if (!(Number.isInteger(masters) && (masters === 1 || (masters >= 3 && masters <= 9)))) throw new Error('--masters: 1 (one redis-server) or a cluster of 3..9');
if (!(Number.isInteger(shards) && shards >= 1 && shards <= 64)) throw new Error('--shards: 1..64');
if (masters > 1 && flags.bullmq) throw new Error('--bullmq: on one redis-server only');
const config = { ratePerSecond: laneRate, capacity: n('capacity'), globalRatePerSecond: cap, ...(shards > 1 ? { shards } : {}) };
// The worker processes send their start lines every 5 ms, not one pipe write per start (the bench's own
// cost, not the throttle's: at 2,000 starts/s those writes were ~5 % of a worker's CPU).
const REPORT_ENV = { THROTTLE_PROC_REPORT_MS: '5' };
const log = (msg: string) => process.stderr.write(`${msg}\n`);

/** The whole machine's busy CPU seconds (every core, every process: other work on the host too). */
function machineBusySeconds(): number {
  try {
    const [, ...f] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
    const n = f.map(Number);
    return (n.reduce((a, b) => a + b, 0) - n[3]! - n[4]!) / 100;
  } catch {
    return 0;
  }
}

/**
 * Per-second CPU use (fraction of one core) of the submitter, each worker process, Redis and the whole
 * machine, sampled while the run lasts: says whether a shortfall is the host's CPU or the algorithm.
 */
function cpuSampler(pids: Record<string, number>) {
  const names = [...Object.keys(pids), 'machine'];
  const read = () => [...Object.values(pids).map(cpuSeconds), machineBusySeconds()];
  const series: Record<string, number[]> = Object.fromEntries(names.map((k) => [k, []]));
  const first = read();
  let last = first;
  let lastAt = performance.now();
  const timer = setInterval(() => {
    const now = read();
    const at = performance.now();
    names.forEach((k, i) => series[k]!.push(Math.round(((now[i]! - last[i]!) / ((at - lastAt) / 1000)) * 100) / 100));
    last = now;
    lastAt = at;
  }, 1000);
  return {
    stop: () => {
      clearInterval(timer);
      const end = read();
      /** CPU seconds of each process (and the machine) from start to stop, not cut into seconds. */
      const totals = Object.fromEntries(names.map((k, i) => [k, end[i]! - first[i]!]));
      return { series, totals };
    },
  };
}

/**
 * Redis µs per job inside scripts, from INFO commandstats: sluice's (FCALL of its function libraries) and
 * BullMQ's (EVALSHA). Wall time inside Redis: grows with the machine's load, unlike the calls.
 */
function scriptUsPerJob(infos: string[], jobs: number): { sluice: number; bullmq: number } {
  const us = (name: string) => infos.reduce((a, info) => a + Number(new RegExp(`^cmdstat_${name}:calls=\\d+,usec=(\\d+)`, 'm').exec(info)?.[1] ?? 0), 0);
  const per = (v: number) => Math.round((v / jobs) * 10) / 10;
  return { sluice: per(us('fcall') + us('fcall_ro')), bullmq: per(us('evalsha')) };
}

/** Redis calls per job by command (and in all; every master's), from INFO commandstats: the commands worth a tenth of a call per job or more. */
function commandsPerJob(infos: string[], jobs: number): Record<string, number> {
  const calls = new Map<string, number>();
  for (const info of infos) for (const m of info.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) calls.set(m[1]!, (calls.get(m[1]!) ?? 0) + Number(m[2]));
  const out: Record<string, number> = {};
  let total = 0;
  for (const [name, count] of calls) {
    const perJob = count / jobs;
    total += perJob;
    if (perJob >= 0.1) out[name] = Math.round(perJob * 100) / 100;
  }
  return { total: Math.round(total * 100) / 100, ...out };
}

/** Where the run goes: what createSluice takes, and each master's port (for its INFO and its CPU). */
interface Target {
  redis: string | { cluster: { host: string; port: number }[] };
  ports: number[];
}

async function runSluice(target: Target) {
  const jobs = capJobs(n('heavy'), n('heavy-jobs'), n('light'), n('light-jobs'), n('seed'));
  const prefix = `gc${Date.now()}`;
  const backend = { target: target.redis } as never;
  const procs = await Promise.all(Array.from({ length: n('procs') }, () => ThrottleProc.start(backend, prefix, 'cap', config, flags['collect-at-start'] ? { collectAtStart: true } : {}, REPORT_ENV)));
  await Promise.all(procs.map((p) => p.worker(n('concurrency'), n('duration') > 0 ? { durationMs: n('duration') } : {})));
  const sluice = createSluice({ redis: target.redis, prefix });
  const throttle = sluice.throttle('cap', config);
  const byId = new Map<string, CapJob>();
  // A submitter that has been running a while: its clients connected and the throttle's queue made
  // (throttle.ready()), so the first second measures the throttle, not a fresh process's first call
  // (~25 ms: connect, queue, config). `--cold` leaves that in.
  if (!flags.cold) {
    await sluice.ready();
    await throttle.ready();
  }
  const warm = n('warm-jobs');
  if (warm > 0) {
    const warmStarts = () => procs.reduce((a, p) => a + p.starts.length, 0);
    for (let i = 0; i < warm; i++) await throttle.submit(`warm-${i % 8}`, { k: 'warm' });
    while (warmStarts() < warm) await new Promise((r) => setTimeout(r, 20));
    // The global meter idle again (its next slot in the past) before the measured burst.
    await new Promise((r) => setTimeout(r, 500));
    for (const p of procs) p.starts.length = 0;
  }
  // One client per master: its pid (CPU), its INFO (commands, script µs, reads).
  const raws = target.ports.map((port) => new Redis(port, '127.0.0.1'));
  const redisPids = await Promise.all(raws.map(async (r) => Number(/process_id:(\d+)/.exec(await r.info('server'))?.[1] ?? 0)));
  // Commands per job from here to the last start (INFO commandstats, reset now): load-independent, unlike rates.
  await Promise.all(raws.map((r) => r.config('RESETSTAT')));
  const redisCpu = Object.fromEntries(redisPids.map((pid, i) => [raws.length === 1 ? 'redis' : `redis${i + 1}`, pid]));
  const cpu = cpuSampler({ submitter: process.pid, ...Object.fromEntries(procs.map((p, i) => [`worker${i + 1}`, p.handle.child.pid!])), ...redisCpu });
  log(`sluice: submitting ${jobs.length} jobs`);
  await submitAll(jobs, async (j) => {
    const r = await throttle.submit(j.key, { k: j.key });
    if (!r.admitted) throw new Error(`refused: ${JSON.stringify(r)}`);
    byId.set(r.jobId, j);
  });
  const deadline = Date.now() + n('timeout') * 1000;
  const count = () => procs.reduce((a, p) => a + p.starts.length, 0);
  while (count() < jobs.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  const { series: cpuPerSecond, totals } = cpu.stop();
  // CPU µs per job over the whole run (submit to last start): the workers together, Redis (every master), the submitter.
  const perJobUs = (keys: string[]) => Math.round((keys.reduce((a, k) => a + (totals[k] ?? 0), 0) * 1e6) / jobs.length);
  const names = Object.keys(totals);
  const cpuUsPerJob = { workers: perJobUs(names.filter((k) => k.startsWith('worker'))), redis: perJobUs(names.filter((k) => k.startsWith('redis'))), submitter: perJobUs(['submitter']) };
  const statsTexts = await Promise.all(raws.map((r) => r.info('commandstats')));
  const redisCallsPerJob = commandsPerJob(statsTexts, jobs.length);
  const redisScriptUsPerJob = scriptUsPerJob(statsTexts, jobs.length);
  // Socket reads Redis made per job (INFO stats, reset with the commands): commands that reach it together
  // (one client's writes of one tick) are one read.
  const reads = (await Promise.all(raws.map((r) => r.info('stats')))).reduce((a, t) => a + Number(/total_reads_processed:(\d+)/.exec(t)?.[1] ?? 0), 0);
  const redisReadsPerJob = Math.round((reads / jobs.length) * 100) / 100;
  for (const r of raws) r.disconnect();
  const slots = new Map<string, number>();
  for (const p of procs)
    for (const s of p.starts) {
      byId.get(s.id)!.start = s.t;
      slots.set(s.id, s.slot);
    }
  await Promise.all(procs.map((p) => p.close()));
  await sluice.close();
  if (flags.dump) writeFileSync(flags.dump, JSON.stringify([...byId].map(([id, j]) => ({ key: j.key, submitted: j.submitted, start: j.start, slot: slots.get(id) }))));
  return { ...capReport(jobs, config), cpuPerSecond, cpuUsPerJob, redisCallsPerJob, redisScriptUsPerJob, redisReadsPerJob };
}

async function runBullmq(port: number) {
  const jobs = capJobs(n('heavy'), n('heavy-jobs'), n('light'), n('light-jobs'), n('seed'));
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
  const byId = new Map<string, CapJob>();
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
  return capReport(jobs, config);
}

const server = masters === 1 ? await startRedis() : undefined;
const cluster = masters > 1 ? await startCluster(masters) : undefined;
const target: Target = server ? { redis: server.url, ports: [server.port] } : { redis: { cluster: cluster!.nodes }, ports: cluster!.nodes.map((node) => node.port) };
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
    warmJobs: n('warm-jobs'),
    collectAtStart: flags['collect-at-start'],
    masters,
    shards,
  };
  const sluice = await runSluice(target);
  const bullmq = flags.bullmq ? await flushThen(() => runBullmq(server!.port)) : undefined;
  process.stdout.write(`${JSON.stringify({ bench: 'global-cap', at: new Date().toISOString(), scenario, sluice, ...(bullmq ? { bullmqLimiter: bullmq } : {}) }, null, 2)}\n`);
} finally {
  await (server ?? cluster)!.dispose();
}

/** `run` on an emptied redis-server (the sluice run's keys gone). */
async function flushThen<T>(run: () => Promise<T>): Promise<T> {
  const raw = new Redis(server!.port, '127.0.0.1');
  await raw.flushall();
  raw.disconnect();
  return run();
}
