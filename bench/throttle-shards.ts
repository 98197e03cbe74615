// One throttle on 1 master vs the same throttle split into 3 shards on a 3-master cluster, in one run:
// admissions per second (closed loop from this process, no worker running: the backlog), then starts
// per second (worker processes draining a second throttle fed at --offered submits per second), then decisions per second (a token bucket over
// 100,000 keys) and three-limit requests per second (all-or-nothing, one slot per client, 100,000 clients) on the same two topologies. Next to every figure: each master's Redis CPU (INFO cpu,
// user + sys) over the phase and per operation: on a machine with a core per master, the busiest
// master's CPU per operation is what bounds the rate.
//   npx tsx bench/throttle-shards.ts [--seconds 4] [--lanes 20000] [--inflight 256] [--worker-procs 2] [--offered 1500]
// Throttle: 10/s and capacity 1,000 per lane over 20,000 lanes (lanes never the limit), no global cap,
// finished jobs not kept. Starts: the closed loop keeps submitting while the worker processes run. Prints one JSON document on stdout; progress goes to stderr.
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createSluice, type Sluice, type ThrottleConfigInput } from '../src/index.js';
import { startTsProcess, type ChildHandle } from '../test/helpers/processes.js';
import { startCluster, startRedis } from '../test/helpers/redis-server.js';
import { closedLoop, redisCpuSeconds } from './lib/load.js';
import { limitAll } from '../src/limiters/all-or-nothing.js';
import { BENCH_POLICIES, identityOf } from './lib/policies.js';

const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '4' },
    lanes: { type: 'string', default: '20000' },
    inflight: { type: 'string', default: '256' },
    'worker-procs': { type: 'string', default: '2' },
    offered: { type: 'string', default: '1500' },
  },
});
const seconds = Number(flags.seconds);
const lanes = Number(flags.lanes);
const inflight = Number(flags.inflight);
const workerProcs = Number(flags['worker-procs']);
const offered = Number(flags.offered);
if (!(seconds >= 1 && seconds <= 30)) throw new Error('--seconds: 1 .. 30');
if (!(lanes >= 1 && lanes <= 100_000)) throw new Error('--lanes: 1 .. 100000');
if (!(workerProcs >= 1 && workerProcs <= 4)) throw new Error('--worker-procs: 1 .. 4');

const log = (msg: string) => process.stderr.write(`[throttle-shards ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
setTimeout(() => {
  log('watchdog: still running, exiting');
  process.exit(124);
}, 600_000).unref();

const CHILD = fileURLToPath(new URL('./lib/throttle-child.ts', import.meta.url));
const NAME = 'bulk';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const r2 = (x: number) => Math.round(x * 100) / 100;

interface Topology {
  label: string;
  shards: number;
  /** What createSluice and the children take. */
  target: string | { cluster: { host: string; port: number }[] };
  /** One plain client per master, for INFO cpu. */
  masters: Redis[];
  dispose(): Promise<void>;
}

async function single(): Promise<Topology> {
  const server = await startRedis();
  const raw = new Redis(server.port, '127.0.0.1');
  return { label: '1 master, shards 1', shards: 1, target: server.url, masters: [raw], dispose: async () => (raw.disconnect(), server.dispose()) };
}

async function cluster(): Promise<Topology> {
  const c = await startCluster(3);
  const masters = c.nodes.map((n) => new Redis(n.port, n.host));
  return { label: '3 masters, shards 3', shards: 3, target: { cluster: c.nodes }, masters, dispose: async () => (masters.forEach((m) => m.disconnect()), c.dispose()) };
}

/** Each master's CPU seconds now. */
const cpus = (t: Topology) => Promise.all(t.masters.map((m) => redisCpuSeconds(() => m.info('cpu'))));

/** Each master's socket reads so far and commands run (INFO stats, INFO commandstats: inside scripts too). */
const work = (t: Topology) =>
  Promise.all(
    t.masters.map(async (m) => {
      const reads = Number(/total_reads_processed:(\d+)/.exec(await m.info('stats'))?.[1] ?? 0);
      const calls = [...(await m.info('commandstats')).matchAll(/calls=(\d+)/g)].reduce((a, x) => a + Number(x[1]), 0);
      return { reads, calls };
    }),
  );

/** Runs `phase`, returns its operations with each master's CPU over it. */
async function measured(t: Topology, phase: () => Promise<{ ops: number; elapsedMs: number }>) {
  const before = await cpus(t);
  const workBefore = await work(t);
  const { ops, elapsedMs } = await phase();
  const after = await cpus(t);
  const workAfter = await work(t);
  const cpu = after.map((a, i) => a - before[i]!);
  return {
    /** Socket reads and commands each master made per operation (the reads are a large part of Redis's CPU). */
    redisReadsPerOpPerMaster: workAfter.map((w, i) => r2((w.reads - workBefore[i]!.reads) / Math.max(1, ops))),
    redisCommandsPerOpPerMaster: workAfter.map((w, i) => r2((w.calls - workBefore[i]!.calls) / Math.max(1, ops))),
    ops,
    opsPerSec: Math.round((ops / elapsedMs) * 1000),
    redisCpuSecondsPerMaster: cpu.map(r2),
    redisUsPerOpPerMaster: cpu.map((c) => r2((c * 1e6) / Math.max(1, ops))),
    redisUsPerOpTotal: r2((cpu.reduce((a, c) => a + c, 0) * 1e6) / Math.max(1, ops)),
    /** The busiest master's CPU per operation: with a core per master, ~1e6 / this is the ceiling. */
    busiestMasterUsPerOp: r2((Math.max(...cpu) * 1e6) / Math.max(1, ops)),
  };
}

async function throttlePhases(t: Topology) {
  const prefix = `bsh${t.shards}`;
  // 10/s: slower than one start per dispatch horizon. Faster lanes with a deep backlog on 2 loaded cores
  // used to send most jobs back late (a lane's successor was handed out already) and start almost
  // nothing, until the dispatchers' back-pressure (bench/late-handback.ts).
  const config: ThrottleConfigInput = { ratePerSecond: 10, capacity: 1000, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000, shards: t.shards };
  const sluice: Sluice = createSluice({ redis: t.target as never, prefix });
  const key = identityOf(lanes);
  // Admissions: a throttle no worker drains (its backlog is left behind).
  const held = sluice.throttle('held', config);
  await held.ready();
  log(`${t.label}: admissions for ${seconds} s`);
  let admitted = 0;
  const admissions = await measured(t, async () => {
    const r = await closedLoop(async () => {
      const s = await held.submit(key(), null);
      if (s.admitted) admitted++;
    }, inflight, seconds * 1000);
    return { ops: r.ops, elapsedMs: r.elapsedMs };
  });
  log(`${t.label}: ${admissions.opsPerSec} admissions/s, ${admitted} admitted; starting ${workerProcs} worker processes`);
  // Starts: another throttle, fed by the same closed loop while worker processes drain it (a backlog
  // drained all at once sends most jobs back late on 2 loaded cores: the flow is what is measured).
  const flow = sluice.throttle(NAME, config);
  await flow.ready();
  const target = typeof t.target === 'string' ? t.target : JSON.stringify(t.target);
  const children: ChildHandle[] = [];
  for (let i = 0; i < workerProcs; i++) {
    const child = startTsProcess(CHILD, [target, prefix, NAME, JSON.stringify(config), JSON.stringify({ concurrency: 50, holdCapacity: 500, record: false })]);
    await child.message('hello');
    children.push(child);
  }
  const count = async () =>
    (await Promise.all(children.map(async (k) => (k.send(JSON.stringify({ cmd: 'count' })), (await k.message<{ n: number }>('count')).n)))).reduce((a, b) => a + b, 0);
  await Promise.all(children.map(async (k) => (k.send(JSON.stringify({ cmd: 'worker' })), k.message('ready'))));
  // What the masters spend with the workers running and nothing to do (their dispatch loops, BullMQ's
  // blocking reads, cluster cron): subtracted from the starts' CPU below, as bench/capacity.ts does.
  const idleMs = 2_000;
  const idle0 = await cpus(t);
  await sleep(idleMs);
  const idlePerMs = (await cpus(t)).map((c, i) => (c - idle0[i]!) / idleMs);
  let submitted = 0;
  let refused = 0;
  let feeding = true;
  // An offered rate, not a closed loop: on 2 cores a closed loop of submits starves the worker
  // processes, whose jobs then come late for their starts and go back to their lanes.
  const feed = (async () => {
    const perTick = offered / 100;
    let owed = 0;
    while (feeding) {
      owed += perTick;
      for (; owed >= 1; owed--) {
        void flow.submit(key(), null).then(
          (s) => (s.admitted ? submitted++ : refused++),
          () => refused++,
        );
      }
      await sleep(10);
    }
  })();
  // The first second is the warm-up (connections, first rounds): measured after it.
  await sleep(1_000);
  const starts = await measured(t, async () => {
    const c0 = await count();
    const t0 = performance.now();
    await sleep(seconds * 1000);
    const c1 = await count();
    return { ops: c1 - c0, elapsedMs: performance.now() - t0 };
  });
  feeding = false;
  await feed;
  log(`${t.label}: ${starts.opsPerSec} starts/s (${submitted} submitted, ${refused} refused while feeding)`);
  await Promise.all(children.map(async (k) => (k.send(JSON.stringify({ cmd: 'close' })), k.exited)));
  await sluice.close();
  const net = starts.redisCpuSecondsPerMaster.map((c, i) => Math.max(0, c - idlePerMs[i]! * seconds * 1000));
  return {
    admissions: { ...admissions, admitted },
    starts: {
      ...starts,
      submittedWhileFeeding: submitted,
      refusedWhileFeeding: refused,
      idleRedisCpuMsPerSecondPerMaster: idlePerMs.map((x) => r2(x * 1e6)),
      /** Less the idle rate: what the jobs themselves cost each master. */
      netRedisUsPerOpPerMaster: net.map((c) => r2((c * 1e6) / Math.max(1, starts.ops))),
      netBusiestMasterUsPerOp: r2((Math.max(...net) * 1e6) / Math.max(1, starts.ops)),
    },
  };
}

/** `op` in a closed loop on a fresh client of `t` (prefix `prefix`) after a 500 ms warm-up (scripts loaded on every master, connections made), measured. */
async function closedLoopPhase(t: Topology, prefix: string, what: string, make: (sluice: Sluice) => () => Promise<unknown>) {
  const sluice = createSluice({ redis: t.target as never, prefix });
  await sluice.ready();
  const op = make(sluice);
  await closedLoop(op, inflight, 500);
  log(`${t.label}: ${what} for ${seconds} s`);
  const r = await measured(t, async () => {
    const l = await closedLoop(op, inflight, seconds * 1000);
    return { ops: l.ops, elapsedMs: l.elapsedMs };
  });
  await sluice.close();
  return r;
}

/** Requests of three limits all-or-nothing (token bucket, sliding counter, fixed window of one client, one slot per client: the rules' slot_key) over 100,000 clients. */
function limitsPhase(t: Topology) {
  return closedLoopPhase(t, `bdl${t.shards}`, 'three-limit requests', (sluice) => {
    const limiters = (['token-bucket', 'sliding-counter', 'fixed-window'] as const).map((a) => sluice.limiter(BENCH_POLICIES[a]));
    const key = identityOf(100_000);
    return () => {
      const client = key();
      const options = { slot: client };
      return limitAll(limiters.map((limiter) => ({ limiter, key: client, options })));
    };
  });
}

/** Token-bucket decisions over 100,000 keys. */
function decisionPhase(t: Topology) {
  return closedLoopPhase(t, `bdx${t.shards}`, 'decisions', (sluice) => {
    const limiter = sluice.limiter(BENCH_POLICIES['token-bucket']);
    const key = identityOf(100_000);
    return () => limiter.limit(key());
  });
}

const result: Record<string, unknown> = {
  bench: 'throttle-shards',
  at: new Date().toISOString(),
  cpus: os.cpus().length,
  loadBefore: os.loadavg().map(r2),
  seconds,
  lanes,
  inflight,
  workerProcs,
  offered,
};
const runs: Record<string, unknown> = {};
for (const make of [single, cluster]) {
  const t = await make();
  try {
    const throttle = await throttlePhases(t);
    const decisions = await decisionPhase(t);
    const threeLimits = await limitsPhase(t);
    runs[t.label] = { ...throttle, decisions, threeLimits };
  } finally {
    await t.dispose();
  }
}
const one = runs['1 master, shards 1'] as Awaited<ReturnType<typeof throttlePhases>> & { decisions: Awaited<ReturnType<typeof decisionPhase>>; threeLimits: Awaited<ReturnType<typeof limitsPhase>> };
const three = runs['3 masters, shards 3'] as typeof one;
result.runs = runs;
result.ratios = {
  admissions: r2(three.admissions.opsPerSec / one.admissions.opsPerSec),
  starts: r2(three.starts.opsPerSec / one.starts.opsPerSec),
  decisions: r2(three.decisions.opsPerSec / one.decisions.opsPerSec),
  threeLimits: r2(three.threeLimits.opsPerSec / one.threeLimits.opsPerSec),
  // With a core per master: the busiest master's CPU per operation, 1 master over 3.
  admissionsCeiling: r2(one.admissions.busiestMasterUsPerOp / three.admissions.busiestMasterUsPerOp),
  startsCeiling: r2(one.starts.busiestMasterUsPerOp / three.starts.busiestMasterUsPerOp),
  startsCeilingNetOfIdle: r2(one.starts.netBusiestMasterUsPerOp / three.starts.netBusiestMasterUsPerOp),
  decisionsCeiling: r2(one.decisions.busiestMasterUsPerOp / three.decisions.busiestMasterUsPerOp),
  threeLimitsCeiling: r2(one.threeLimits.busiestMasterUsPerOp / three.threeLimits.busiestMasterUsPerOp),
};
result.loadAfter = os.loadavg().map(r2);
process.stdout.write(JSON.stringify(result, null, 2) + '\n');
process.exit(0);
