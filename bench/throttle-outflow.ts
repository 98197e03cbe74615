// Throttle outflow accuracy, measured where work starts: 2 worker processes (bench/lib/throttle-child.ts)
// record the wall-clock instant of every handler start; this process submits the jobs and reports,
// per case: achieved rate / configured rate, the most starts in any 1 s and any 100 ms window (per lane
// and in total), and (actual start - scheduled start) against the slot the gate granted and against
// the start the admission predicted. A private redis-server, started and stopped here.
//   npx tsx bench/throttle-outflow.ts [--cases 1-key,100-keys,10000-keys,backlog-1-key,backlog-100-keys]
//                                     [--procs 2] [--global-rate 2000] [--outage 2]
// Prints one JSON document on stdout; progress goes to stderr.
import { appendFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createSluice, type ThrottleConfigInput } from '../src/index.js';
import { startTsProcess, type ChildHandle } from '../test/helpers/processes.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { outflowOf, spreadOf } from '../test/helpers/throttle-stats.js';

const { values: flags } = parseArgs({
  options: {
    cases: { type: 'string', default: '1-key,100-keys,10000-keys,backlog-1-key,backlog-100-keys' },
    procs: { type: 'string', default: '2' },
    'global-rate': { type: 'string', default: '2000' },
    /** Keys of the many-keys case (named `10000-keys` whatever this is). */
    'many-keys': { type: 'string', default: '10000' },
    outage: { type: 'string', default: '2' },
    /** Write every start ([case, wall ms, slot ms, predicted ms, lane, job id] lines) to this file. */
    dump: { type: 'string' },
  },
});
const procs = Number(flags.procs);
const globalRate = Number(flags['global-rate']);
const outageMs = Number(flags.outage) * 1000;
const manyKeys = Number(flags['many-keys']);
if (!(manyKeys >= 10 && manyKeys <= 100_000)) throw new Error('--many-keys: 10 .. 100000');
if (!(procs >= 1 && procs <= 8)) throw new Error('--procs: 1 .. 8');
if (!(globalRate >= 100 && globalRate <= 20_000)) throw new Error('--global-rate: 100 .. 20000');
if (!(outageMs >= 0 && outageMs <= 30_000)) throw new Error('--outage: seconds in [0, 30]');

interface Case {
  /** Keys (lanes). */
  keys: number;
  /** Jobs of key i. */
  jobsOf: (i: number) => number;
  config: ThrottleConfigInput;
  /** Jobs are submitted while no worker runs; workers come up `outage` later. */
  backlog: boolean;
  why: string;
}

const CASES: Record<string, Case> = {
  '1-key': {
    keys: 1,
    jobsOf: () => 400,
    config: { ratePerSecond: 50, capacity: 1_000 },
    backlog: false,
    why: 'one busy key, 400 jobs at 50/s: 8 s',
  },
  '100-keys': {
    keys: 100,
    jobsOf: () => 40,
    config: { ratePerSecond: 5, capacity: 100 },
    backlog: false,
    why: '100 busy keys, 40 jobs each at 5/s per key (500/s in total): 8 s',
  },
  '10000-keys': {
    keys: manyKeys,
    jobsOf: (i) => 1 + (i % 2),
    config: { ratePerSecond: 1, capacity: 10, globalRatePerSecond: globalRate },
    backlog: false,
    why:
      `${manyKeys} keys with 1 or 2 jobs each (${manyKeys * 1.5} jobs), 1/s per key under a global cap of ${globalRate}/s: ` +
      `a per-key rate alone would start every key's first job at once (${manyKeys} starts in the first instant), so ` +
      'with this many keys it is the global cap that shapes the outflow; 1/s per key still spaces each second job',
  },
  'backlog-1-key': {
    keys: 1,
    jobsOf: () => 300,
    config: { ratePerSecond: 50, capacity: 1_000 },
    backlog: true,
    why: '300 jobs at 50/s queued while no worker runs; workers start after the outage: 6 s',
  },
  'backlog-100-keys': {
    keys: 100,
    jobsOf: () => 20,
    config: { ratePerSecond: 5, capacity: 100 },
    backlog: true,
    why: '100 keys x 20 jobs at 5/s queued while no worker runs; workers start after the outage: 4 s',
  },
};
const caseNames = flags.cases.split(',');
for (const c of caseNames) if (!CASES[c]) throw new Error(`--cases: unknown '${c}' (known: ${Object.keys(CASES).join(', ')})`);

const log = (msg: string) => process.stderr.write(`[throttle-outflow ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
setTimeout(() => {
  log('watchdog: still running after 10 min, exiting');
  process.exit(124);
}, 600_000).unref();

const CHILD = fileURLToPath(new URL('./lib/throttle-child.ts', import.meta.url));
const PREFIX = 'bo';
const wallNow = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Start = [number, number, number, string, string];

if (flags.dump) writeFileSync(flags.dump, '');
const server = await startRedis();
const sluice = createSluice({ redis: server.url, prefix: PREFIX });
const children: ChildHandle[] = [];

async function runCase(name: string, c: Case) {
  const config: ThrottleConfigInput = { ...c.config, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000 };
  const throttleName = `of-${name}`;
  const throttle = sluice.throttle(throttleName, config);
  const kids = await Promise.all(
    Array.from({ length: procs }, async () => {
      const h = startTsProcess(CHILD, [server.url, PREFIX, throttleName, JSON.stringify(config), JSON.stringify({ concurrency: 20, holdCapacity: 300 })]);
      children.push(h);
      await h.message('hello');
      return h;
    }),
  );
  const startWorkers = async () => {
    await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'worker' })), k.message('ready'))));
  };
  if (!c.backlog) await startWorkers();

  // Round robin over keys, 64 submits in flight: every lane builds its queue at the same time.
  const jobs: string[] = [];
  const maxJobs = Math.max(...Array.from({ length: c.keys }, (_, i) => c.jobsOf(i)));
  for (let round = 0; round < maxJobs; round++) for (let i = 0; i < c.keys; i++) if (round < c.jobsOf(i)) jobs.push(`k${i}`);
  let next = 0;
  let refused = 0;
  const t0 = wallNow();
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < jobs.length) {
        const key = jobs[next++]!;
        const r = await throttle.submit(key, { k: key });
        if (!r.admitted) refused++;
      }
    }),
  );
  const submitMs = wallNow() - t0;
  log(`${name}: ${jobs.length} jobs submitted in ${Math.round(submitMs)} ms (${refused} refused)`);
  let workersAt = t0;
  if (c.backlog) {
    await sleep(outageMs);
    workersAt = wallNow();
    await startWorkers();
    log(`${name}: workers up ${Math.round(wallNow() - workersAt)} ms after the outage ended`);
  }

  const expected = jobs.length - refused;
  const laneRate = c.config.ratePerSecond;
  // Bounded: 4x the ideal drain time + 30 s (a case that falls far behind reports what did not start).
  const idealMs = (expected / Math.min(c.config.globalRatePerSecond ?? Infinity, c.keys * laneRate)) * 1000;
  const budgetMs = 4 * idealMs + 30_000;
  const deadline = wallNow() + budgetMs;
  let seen = 0;
  while (wallNow() < deadline) {
    const counts = await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'count' })), (await k.message<{ n: number }>('count')).n)));
    seen = counts.reduce((a, b) => a + b, 0);
    if (seen >= expected) break;
    await sleep(250);
  }
  // Let a late duplicate (a job started twice) show up before reading.
  await sleep(500);
  const reports = await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'report' })), k.message<{ starts: Start[]; deferrals: number }>('report'))));
  await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'close' })), k.exited)));
  const starts = reports.flatMap((r) => r.starts).map(([t, slot, predicted, lane, id]) => ({ t, slot, predicted, lane, id }));
  if (flags.dump) appendFileSync(flags.dump, starts.map((s) => JSON.stringify([name, s.t, s.slot, s.predicted, s.lane, s.id])).join('\n') + '\n');
  const flow = outflowOf(starts, laneRate, c.config.globalRatePerSecond ?? null);
  const first = Math.min(...starts.map((s) => s.t));
  const lanesLeft = await Promise.all(Array.from({ length: Math.min(c.keys, 100) }, (_, i) => throttle.lane(`k${i}`)));
  return {
    case: name,
    why: c.why,
    config: c.config,
    procs,
    keys: c.keys,
    jobs: jobs.length,
    refused,
    submitMs: Math.round(submitMs),
    started: starts.length,
    startedTwice: starts.length - new Set(starts.map((s) => s.id)).size,
    idealDrainMs: Math.round(idealMs),
    budgetMs: Math.round(budgetMs),
    notStartedWithinBudget: expected - new Set(starts.map((s) => s.id)).size,
    perProcess: reports.map((r) => r.starts.length).join('/'),
    /** Times the gate sent a job back to BullMQ's delayed set to wait for its slot. */
    gateDeferrals: reports.reduce((n, r) => n + r.deferrals, 0),
    ...flow,
    // The gate's slot is what the outflow guarantee is about; the admission's prediction also moves
    // with everything that happened in between (an outage, a global cap shared with other keys).
    lateVsGrantedSlotMs: spreadOf(starts.map((s) => s.t - s.slot)),
    lateVsAdmissionPredictionMs: spreadOf(starts.map((s) => s.t - s.predicted)),
    ...(c.backlog
      ? {
          outageMs,
          firstStartAfterWorkersMs: Math.round(first - workersAt),
          startsInFirstSecondAfterFirstStart: starts.filter((s) => s.t < first + 1000).length,
          startsInFirstSecondAfterWorkersReturned: starts.filter((s) => s.t < workersAt + 1000).length,
          limitIn1s: c.keys * laneRate,
        }
      : {}),
    queuedLeftInSampledLanes: lanesLeft.reduce((n, l) => n + l.depth, 0),
    /** Starts in each second from the first start: the shape of the outflow (gaps show as zeros). */
    startsPerSecond: perSecond(starts.map((s) => s.t), first),
  };
}

function perSecond(times: number[], from: number): number[] {
  const counts: number[] = [];
  for (const t of times) {
    const i = Math.floor((t - from) / 1000);
    while (counts.length <= i) counts.push(0);
    counts[i]!++;
  }
  return counts;
}

const results: object[] = [];
try {
  for (const name of caseNames) {
    const r = await runCase(name, CASES[name]!);
    log(`${name}: ${JSON.stringify(r).slice(0, 400)}`);
    results.push(r);
  }
} finally {
  for (const c of children) if (c.child.exitCode === null) c.child.kill('SIGKILL');
  await sluice.close();
  await server.dispose();
}
process.stdout.write(JSON.stringify({ bench: 'throttle-outflow', procs, workerConcurrency: 20, holdCapacity: 300, results }, null, 2) + '\n');
