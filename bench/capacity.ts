// Redis CPU per operation, for the capacity model in docs/operations.md (issue 12, item 6): what one
// decision (each algorithm), one throttle admission (submit) and one job start (dispatch + gate + BullMQ's
// fetch, completion and events) cost the Redis main thread. Measured on a private redis-server from
// `INFO cpu` (used_cpu_*_main_thread deltas: the thread that is the capacity limit) and
// `INFO commandstats` (calls and usec per command, reset before each phase), which a loaded machine moves
// far less than wall-clock rates: they count the CPU Redis spent, not how long it waited for a core.
// Idle CPU (serverCron, BullMQ's and the dispatcher's timers) is measured per second and subtracted.
//   npx tsx bench/capacity.ts [--decisions 100000] [--jobs 3000] [--lanes 100] [--reps 3]
// Prints one JSON document on stdout; progress goes to stderr.
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createSluice, type Algorithm, type Limiter } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop } from './lib/load.js';
import { BENCH_ALGORITHMS, BENCH_POLICIES } from './lib/policies.js';

const { values: flags } = parseArgs({
  options: {
    decisions: { type: 'string', default: '100000' },
    jobs: { type: 'string', default: '3000' },
    lanes: { type: 'string', default: '100' },
    keys: { type: 'string', default: '100000' },
    reps: { type: 'string', default: '3' },
  },
});
const DECISIONS = Number(flags.decisions);
const JOBS = Number(flags.jobs);
const LANES = Number(flags.lanes);
const KEYS = Number(flags.keys);
const REPS = Number(flags.reps);
if (!(REPS >= 1 && REPS <= 9)) throw new Error('--reps: 1 .. 9');
if (!(DECISIONS >= 1000 && DECISIONS <= 1_000_000)) throw new Error('--decisions: 1000 .. 1000000');
if (!(JOBS >= 100 && JOBS <= 100_000)) throw new Error('--jobs: 100 .. 100000');
if (!(LANES >= 1 && LANES <= JOBS)) throw new Error('--lanes: 1 .. jobs');
const log = (msg: string) => process.stderr.write(`[capacity ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
setTimeout(() => {
  log('watchdog: still running after 10 min, exiting');
  process.exit(124);
}, 600_000).unref();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r2 = (x: number) => Math.round(x * 100) / 100;

const server = await startRedis();
/** The measuring connection: its own INFO / CONFIG calls are taken out of the command counts. */
const raw = new Redis(server.port, '127.0.0.1');

interface Snapshot {
  cpuMain: number;
  cpuAll: number;
  at: number;
}
async function snapshot(): Promise<Snapshot> {
  const text = await raw.info('cpu');
  const g = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(text)?.[1] ?? NaN);
  return { cpuMain: g('used_cpu_user_main_thread') + g('used_cpu_sys_main_thread'), cpuAll: g('used_cpu_user') + g('used_cpu_sys'), at: performance.now() };
}

/** Per command: calls and usec, from INFO commandstats (the measuring connection's own commands removed). */
async function commandStats(): Promise<Record<string, { calls: number; usec: number }>> {
  const out: Record<string, { calls: number; usec: number }> = {};
  for (const line of (await raw.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (!m) continue;
    if (m[1] === 'info' || m[1] === 'config|resetstat') continue;
    out[m[1]!] = { calls: Number(m[2]), usec: Number(m[3]) };
  }
  return out;
}

/** Redis main-thread µs per second while nothing is asked of it but the clients' own timers. */
async function idleUsPerSecond(ms: number): Promise<number> {
  const a = await snapshot();
  await sleep(ms);
  const b = await snapshot();
  return ((b.cpuMain - a.cpuMain) * 1e6) / ((b.at - a.at) / 1000);
}

interface Phase {
  ops: number;
  seconds: number;
  /** Main-thread CPU µs per operation, the idle rate × duration taken out. */
  cpuUsPerOp: number;
  cpuUsPerOpRaw: number;
  /** All threads (main + background: lazy free, AOF/RDB, none here). */
  cpuAllUsPerOpRaw: number;
  idleUsPerSecond: number;
  /** EVALSHA/EVAL calls per operation and their usec (scripts' inner commands included in it). */
  scriptCallsPerOp: number;
  scriptUsecPerOp: number;
  /** Per command: calls and usec per operation (commands run inside scripts appear here too, and inside the script's usec). */
  commands: Record<string, { callsPerOp: number; usecPerOp: number }>;
  /** Operations per second one Redis core would sustain at this cost (1e6 / cpuUsPerOp). */
  opsPerCoreSecond: number;
}

async function measure(ops: number, idle: number, run: () => Promise<void>): Promise<Phase> {
  await raw.config('RESETSTAT');
  const a = await snapshot();
  await run();
  const b = await snapshot();
  const stats = await commandStats();
  const seconds = (b.at - a.at) / 1000;
  const main = (b.cpuMain - a.cpuMain) * 1e6;
  const net = main - idle * seconds;
  const script = ['fcall', 'fcall_ro', 'evalsha', 'eval', 'evalsha_ro', 'eval_ro'].reduce((s, c) => ({ calls: s.calls + (stats[c]?.calls ?? 0), usec: s.usec + (stats[c]?.usec ?? 0) }), { calls: 0, usec: 0 });
  const commands = Object.fromEntries(
    Object.entries(stats)
      .sort((x, y) => y[1].usec - x[1].usec)
      .map(([k, v]) => [k, { callsPerOp: r2(v.calls / ops), usecPerOp: r2(v.usec / ops) }]),
  );
  const cpuUsPerOp = r2(net / ops);
  return {
    ops,
    seconds: r2(seconds),
    cpuUsPerOp,
    cpuUsPerOpRaw: r2(main / ops),
    cpuAllUsPerOpRaw: r2(((b.cpuAll - a.cpuAll) * 1e6) / ops),
    idleUsPerSecond: Math.round(idle),
    scriptCallsPerOp: r2(script.calls / ops),
    scriptUsecPerOp: r2(script.usec / ops),
    commands,
    opsPerCoreSecond: Math.round(1e6 / cpuUsPerOp),
  };
}

const sluice = createSluice({ redis: server.url, prefix: 'cap' });

/** One rep of every phase; names carry the rep so that no state carries over. */
async function runOnce(rep: number): Promise<Record<string, any>> {
  const results: Record<string, any> = {};
  // ---- Decisions: every algorithm, `u<n>` identities over KEYS keys (stored verbatim), every call allowed.
  // Batched: 64 in flight from one process, so the Limiter folds up to 32 decisions into one script
  // call (single node only). Unbatched: 64 in flight, one script call per decision, as on a cluster.
  // One in flight: every call its own read and write, the costliest case (a lightly loaded server).
  const idleDecisions = await idleUsPerSecond(2000);
  log(`idle (no clients working): ${Math.round(idleDecisions)} µs/s`);
  const decisions: Record<string, unknown> = {};
  // A second instance whose script registry has no batched forms, as on a cluster: every decision is
  // its own EVALSHA (reaching into the registry's private map is a bench-only shortcut; there is no option).
  const single = createSluice({ redis: server.url, prefix: `cap1r${rep}` });
  const unbatch = (l: Limiter) => {
    const registry = (l as unknown as { ctx: { scripts: { scripts: Map<string, unknown> } } }).ctx.scripts.scripts;
    for (const name of [...registry.keys()]) if (name.startsWith('batch:')) registry.delete(name);
    return l;
  };
  const opOf = (algorithm: Algorithm, limiter: Limiter) =>
      algorithm === 'concurrency'
        ? async () => {
            const key = `u${(Math.random() * KEYS) | 0}`;
            const d = await limiter.limit(key);
            if (d.leaseId) await limiter.release(key, d.leaseId);
          }
        : () => limiter.limit(`u${(Math.random() * KEYS) | 0}`);
  for (const algorithm of BENCH_ALGORITHMS as Algorithm[]) {
    const op = opOf(algorithm, sluice.limiter(BENCH_POLICIES[algorithm]));
    const opSingle = opOf(algorithm, unbatch(single.limiter(BENCH_POLICIES[algorithm])));
    await closedLoop(op, 64, 2000, 2000); // warm: scripts loaded, JIT warm
    await closedLoop(opSingle, 64, 2000, 2000);
    const row: Record<string, Phase> = {};
    for (const [mode, inflight, n] of [
      ['batched', 64, DECISIONS],
      ['unbatched', 64, DECISIONS / 2],
      ['oneInFlight', 1, Math.min(DECISIONS / 4, 10_000)],
    ] as const) {
      let errors = 0;
      row[mode] = await measure(n, idleDecisions, async () => {
        const r = await closedLoop(mode === 'batched' ? op : opSingle, inflight, 120_000, n);
        errors = r.errors;
      });
      if (errors) throw new Error(`${algorithm} ${mode}: ${errors} errors`);
      log(`${algorithm} ${mode}: ${row[mode].cpuUsPerOp} µs/decision (${row[mode].scriptCallsPerOp} script calls per decision), ${row[mode].opsPerCoreSecond}/s per core`);
    }
    decisions[algorithm] = row;
  }
  await single.close();
  results.decisions = decisions;
  await raw.flushall();

  // ---- Admissions: submit = the admission script + BullMQ's add (a delayed job), LANES keys, no worker.
  const throttleConfig = { ratePerSecond: 3, capacity: 100_000, submitTimeoutMs: 30_000 };
  const admitOnly = sluice.throttle(`admit${rep}`, throttleConfig);
  let seq = 0;
  const submitOp = async (t: typeof admitOnly) => {
    const r = await t.submit(`k${seq % LANES}`, { i: seq++ });
    if (!r.admitted) throw new Error(`refused: ${r.reason}`);
  };
  await closedLoop(() => submitOp(admitOnly), 16, 2000, 500);
  const idleAdmit = await idleUsPerSecond(2000);
  const admissions: Record<string, Phase> = {};
  for (const [mode, inflight] of [
    ['inflight64', 64],
    ['inflight1', 1],
  ] as const) {
    const n = mode === 'inflight64' ? JOBS * 2 : JOBS;
    let errors = 0;
    admissions[mode] = await measure(n, idleAdmit, async () => {
      errors = (await closedLoop(() => submitOp(admitOnly), inflight, 120_000, n)).errors;
    });
    if (errors) throw new Error(`admissions ${mode}: ${errors} errors`);
    log(`admission ${mode}: ${admissions[mode].cpuUsPerOp} µs/submit (${admissions[mode].scriptCallsPerOp} script calls), ${admissions[mode].opsPerCoreSecond}/s per core`);
  }
  results.admissions = admissions;
  await admitOnly.close();
  await raw.flushall();

  // ---- Starts: a worker in this process runs jobs as their lanes' slots come. Jobs are submitted
  // while the worker runs (LANES lanes at 3/s each), the phase ends when every job has completed;
  // the admissions' own cost (measured above, same mode) and the idle rate are taken out, so what is
  // left is the dispatcher, the start gate, BullMQ's move to active, completion and its event stream.
  const runThrottle = sluice.throttle(`run${rep}`, throttleConfig);
  let handled = 0;
  const worker = sluice.worker(`run${rep}`, async () => {
    handled++;
    return 1;
  }, { concurrency: 50 });
  await worker.waitUntilReady();
  // warm the path once
  for (let i = 0; i < 20; i++) await submitOp(runThrottle);
  while (handled < 20) await sleep(100);
  await sleep(1500);
  const idleWorker = await idleUsPerSecond(3000);
  log(`idle with a worker waiting: ${Math.round(idleWorker)} µs/s`);
  handled = 0;
  const submitCost = admissions.inflight64!.cpuUsPerOp;
  const startsPhase = await measure(JOBS, idleWorker, async () => {
    const r = await closedLoop(() => submitOp(runThrottle), 64, 120_000, JOBS);
    if (r.errors) throw new Error(`starts: ${r.errors} submit errors`);
    const deadline = Date.now() + 120_000;
    while (handled < JOBS && Date.now() < deadline) await sleep(50);
    if (handled < JOBS) throw new Error(`starts: only ${handled} of ${JOBS} ran`);
    await sleep(300); // the last completions' commands
  });
  const perStart = r2(startsPhase.cpuUsPerOp - submitCost);
  results.starts = {
    note: 'submitAndRun = whole phase per job (submit + dispatch + start + completion); startUs = that minus the admission cost of the same run (inflight64)',
    submitAndRun: startsPhase,
    startCpuUsPerJob: perStart,
    startsPerCoreSecond: Math.round(1e6 / perStart),
    jobsPerCoreSecondSubmitAndRun: startsPhase.opsPerCoreSecond,
    lanes: LANES,
    laneRatePerSecond: throttleConfig.ratePerSecond,
    workerConcurrency: 50,
  };
  log(`starts: ${startsPhase.cpuUsPerOp} µs per job submitted and run, ${perStart} µs per start without its submit`);
  await worker.close();
  await runThrottle.close();
  await raw.flushall();
  return results;
}

const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[v.length >> 1]! : r2((v[v.length / 2 - 1]! + v[v.length / 2]!) / 2);
};
try {
  const reps: Record<string, any>[] = [];
  for (let rep = 0; rep < REPS; rep++) {
    log(`rep ${rep + 1} of ${REPS}`);
    reps.push(await runOnce(rep));
  }
  // Medians over reps of the figures the capacity model uses (µs of Redis main-thread CPU per operation).
  const summary: Record<string, unknown> = { decisions: {} as Record<string, unknown> };
  for (const algorithm of BENCH_ALGORITHMS) {
    (summary.decisions as Record<string, unknown>)[algorithm] = Object.fromEntries(
      ['batched', 'unbatched', 'oneInFlight'].map((mode) => [mode, median(reps.map((r) => r.decisions[algorithm][mode].cpuUsPerOp))]),
    );
  }
  summary.admission = Object.fromEntries(['inflight64', 'inflight1'].map((mode) => [mode, median(reps.map((r) => r.admissions[mode].cpuUsPerOp))]));
  summary.start = median(reps.map((r) => r.starts.startCpuUsPerJob));
  summary.submitAndRun = median(reps.map((r) => r.starts.submitAndRun.cpuUsPerOp));
  summary.perRep = {
    start: reps.map((r) => r.starts.startCpuUsPerJob),
    admissionInflight64: reps.map((r) => r.admissions.inflight64.cpuUsPerOp),
    tokenBucketBatched: reps.map((r) => r.decisions['token-bucket'].batched.cpuUsPerOp),
  };
  const info = await raw.info('server');
  process.stdout.write(
    JSON.stringify(
      {
        bench: 'capacity',
        at: new Date().toISOString(),
        redisVersion: /redis_version:(\S+)/.exec(info)?.[1],
        decisionsPerAlgorithm: DECISIONS,
        keys: KEYS,
        jobs: JOBS,
        repCount: REPS,
        summaryUsPerOp: summary,
        notes: [
          'cpuUsPerOp: Redis main-thread CPU (INFO cpu used_cpu_user_main_thread + used_cpu_sys_main_thread) per operation, minus the idle rate measured just before × the phase duration',
          'commands: INFO commandstats after CONFIG RESETSTAT; usec excludes reading, parsing and replying (the rest of cpuUsPerOp); commands run inside scripts are counted too and their time is inside the script call (fcall, or evalsha)',
          'decisions: policies from bench/lib/policies.ts (every call allowed), identities u<0..keys-1> at random; concurrency = acquire + release',
          'batched = 64 in flight (the Limiter batches up to 32 decisions per script call on a single node); unbatched = 64 in flight, one EVALSHA per decision (batched forms removed from the registry, as on a cluster); oneInFlight = one call at a time (every call its own read and write: the costliest case)',
          'admissions: throttle.submit = one admission script that writes the BullMQ delayed job (payload {i}); starts: in-process worker, handler returns at once',
        ],
        reps,
      },
      null,
      2,
    ) + '\n',
  );
} finally {
  await sluice.close();
  raw.disconnect();
  await server.dispose();
}
