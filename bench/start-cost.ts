// What one job start costs, a sluice throttle's worker against BullMQ's bare worker at the same rate
// (issue 13: the starts the machine can afford decide the cap it can hold). Each side gets the same
// jobs queued before its worker process starts (nothing is submitted while it is measured), one worker
// process, the same concurrency, and a private redis-server of its own; after --warm seconds, a window
// of --window seconds is measured:
//   workerCpuUsPerJob   the worker process's CPU (user + system, /proc/<pid>/stat) per job started
//   redisCpuUsPerJob    redis-server's CPU per job started (everything it did: scripts, replies, reads)
//   workerWritesPerJob  write syscalls the worker process made per job (/proc/<pid>/io syscw: every
//                       socket write to Redis; each costs tens of µs of kernel time on loopback)
//   redisReadsPerJob    socket reads Redis made per job (INFO stats: commands that arrive together are one)
//   redisCommandsPerJob commands Redis ran per job, those inside scripts included (INFO commandstats)
// sluice: a throttle with --lanes lanes of --lane-rate a second each under a global cap of --rate (the
// dispatcher paces and shares), or with --no-cap no global cap and each lane at --rate / --lanes; BullMQ:
// a queue with its limiter at --rate (no lanes, no fairness).
// Reps alternate the two sides; the median of each figure is reported, with every rep's.
//   npx tsx bench/start-cost.ts [--rate 1000] [--lanes 100] [--lane-rate 200] [--concurrency 20] [--warm 2] [--window 4] [--reps 3]
//     [--sides sluice,bullmq] [--no-cap] [--breakdown]
// Prints one JSON document on stdout; progress goes to stderr.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createSluice } from '../src/index.js';
import { startTsProcess } from '../test/helpers/processes.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { ThrottleProc } from '../test/helpers/throttle-procs.js';
import { cpuSeconds } from './lib/proc-cpu.js';

const { values: flags } = parseArgs({
  options: {
    rate: { type: 'string', default: '1000' },
    lanes: { type: 'string', default: '100' },
    'lane-rate': { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '20' },
    warm: { type: 'string', default: '2' },
    window: { type: 'string', default: '4' },
    reps: { type: 'string', default: '3' },
    sides: { type: 'string', default: 'sluice,bullmq' },
    // No global cap: each lane paced at --rate / --lanes by its own meter (the dispatcher's other regime).
    'no-cap': { type: 'boolean', default: false },
    // Per rep, Redis's commands per job by command (calls and usec), the costliest first.
    breakdown: { type: 'boolean', default: false },
  },
});
const sides = flags.sides.split(',');
if (!sides.every((x) => x === 'sluice' || x === 'bullmq')) throw new Error('--sides: sluice, bullmq');
const rate = Number(flags.rate);
const lanes = Number(flags.lanes);
const noCap = flags['no-cap'];
const laneRate = noCap ? Number(flags.rate) / Number(flags.lanes) : Number(flags['lane-rate']);
const concurrency = Number(flags.concurrency);
const warmMs = Number(flags.warm) * 1000;
const windowMs = Number(flags.window) * 1000;
const reps = Number(flags.reps);
if (!(rate >= 10 && rate <= 5000 && lanes >= 1 && lanes <= 10_000 && laneRate > 0)) throw new Error('--rate 10..5000, --lanes 1..10000, --lane-rate > 0');
if (!(warmMs >= 1000 && windowMs >= 1000 && warmMs + windowMs <= 30_000 && reps >= 1 && reps <= 9)) throw new Error('--warm, --window: >= 1 s, 30 s together at most; --reps 1..9');
// Enough queued work for the warm-up, the window and a second more: the rate never runs out of jobs.
const jobCount = Math.ceil((rate * (warmMs + windowMs + 1000)) / 1000);
const log = (msg: string) => process.stderr.write(`${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A process's CPU so far, in µs (clock ticks of 10 ms). */
const cpuUs = (pid: number) => Math.round(cpuSeconds(pid) * 1e6);

function procWrites(pid: number): number {
  return Number(/syscw:\s*(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
}
async function redisCounters(raw: Redis): Promise<{ reads: number; commands: number; byCommand: Map<string, { calls: number; usec: number }> }> {
  const stats = await raw.info('stats');
  const commandstats = await raw.info('commandstats');
  let commands = 0;
  const byCommand = new Map<string, { calls: number; usec: number }>();
  for (const m of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    commands += Number(m[2]);
    byCommand.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return { reads: Number(/total_reads_processed:(\d+)/.exec(stats)![1]), commands, byCommand };
}

/**
 * The window's commands per job, by command, the costliest first (Redis's own usec: a script's
 * includes its inner commands, which are listed again on their own lines).
 */
function commandBreakdown(before: Map<string, { calls: number; usec: number }>, after: Map<string, { calls: number; usec: number }>, jobs: number): Record<string, { calls: number; usec: number }> {
  const rows = [...after].map(([name, a]) => {
    const b = before.get(name) ?? { calls: 0, usec: 0 };
    return [name, { calls: Math.round(((a.calls - b.calls) / jobs) * 100) / 100, usec: Math.round(((a.usec - b.usec) / jobs) * 10) / 10 }] as const;
  });
  return Object.fromEntries(rows.filter(([, r]) => r.calls > 0).sort((x, y) => y[1].usec - x[1].usec));
}

interface Sample { jobs: number; workerCpuUsPerJob: number; redisCpuUsPerJob: number; workerWritesPerJob: number; redisReadsPerJob: number; redisCommandsPerJob: number }
/** A rep's per-command figures (--breakdown), kept apart from the medians. */
const breakdowns: Record<'sluice' | 'bullmq', Record<string, { calls: number; usec: number }>[]> = { sluice: [], bullmq: [] };

/** Measures the window once the worker has run `warmMs`: `started()` counts the jobs started so far. */
async function measure(side: 'sluice' | 'bullmq', workerPid: number, redisPid: number, raw: Redis, started: () => Promise<number>): Promise<Sample> {
  await sleep(warmMs);
  const [n0, c0, r0, w0, k0] = [await started(), cpuUs(workerPid), cpuUs(redisPid), procWrites(workerPid), await redisCounters(raw)];
  await sleep(windowMs);
  const [n1, c1, r1, w1, k1] = [await started(), cpuUs(workerPid), cpuUs(redisPid), procWrites(workerPid), await redisCounters(raw)];
  const jobs = n1 - n0;
  const per = (x: number) => Math.round((x / jobs) * 100) / 100;
  if (flags.breakdown) breakdowns[side].push(commandBreakdown(k0.byCommand, k1.byCommand, jobs));
  return { jobs, workerCpuUsPerJob: per(c1 - c0), redisCpuUsPerJob: per(r1 - r0), workerWritesPerJob: per(w1 - w0), redisReadsPerJob: per(k1.reads - k0.reads), redisCommandsPerJob: per(k1.commands - k0.commands) };
}

async function redisPidOf(raw: Redis): Promise<number> {
  return Number(/process_id:(\d+)/.exec(await raw.info('server'))![1]);
}

async function runSluice(): Promise<Sample> {
  const server = await startRedis();
  const raw = new Redis(server.port);
  const prefix = 'sc';
  const config = { ratePerSecond: laneRate, capacity: Math.max(1000, Math.ceil(jobCount / lanes) + 1), ...(noCap ? {} : { globalRatePerSecond: rate }) };
  const sluice = createSluice({ redis: server.url, prefix });
  try {
    const throttle = sluice.throttle('cost', config);
    await throttle.ready();
    for (let i = 0; i < jobCount; i += 64) {
      await Promise.all(Array.from({ length: Math.min(64, jobCount - i) }, (_, k) => throttle.submit(`lane-${(i + k) % lanes}`, { i: i + k })));
    }
    const proc = await ThrottleProc.start({ target: server.url } as never, prefix, 'cost', config, {}, { THROTTLE_PROC_REPORT_MS: '5' });
    try {
      await proc.worker(concurrency);
      return await measure('sluice', proc.handle.child.pid!, await redisPidOf(raw), raw, async () => proc.starts.length);
    } finally {
      await proc.close();
    }
  } finally {
    await sluice.close();
    raw.disconnect();
    await server.dispose();
  }
}

async function runBullmq(): Promise<Sample> {
  const server = await startRedis();
  const raw = new Redis(server.port);
  const queue = new Queue('cost', { connection: { host: '127.0.0.1', port: server.port } });
  try {
    for (let i = 0; i < jobCount; i += 1000) {
      await queue.addBulk(Array.from({ length: Math.min(1000, jobCount - i) }, (_, k) => ({ name: 'cost', data: { i: i + k } })));
    }
    const child = startTsProcess(join(import.meta.dirname, 'lib/bullmq-worker-proc.ts'), [String(server.port), 'cost', String(rate), String(concurrency)]);
    try {
      await child.message('ready');
      const started = async () => {
        child.send(JSON.stringify({ cmd: 'count' }));
        return (await child.message<{ n: number }>('count')).n;
      };
      return await measure('bullmq', child.child.pid!, await redisPidOf(raw), raw, started);
    } finally {
      child.send(JSON.stringify({ cmd: 'close' }));
      await child.exited;
    }
  } finally {
    await queue.close();
    raw.disconnect();
    await server.dispose();
  }
}

const samples: Record<'sluice' | 'bullmq', Sample[]> = { sluice: [], bullmq: [] };
for (let r = 0; r < reps; r++) {
  if (sides.includes('sluice')) {
    log(`rep ${r + 1}: sluice`);
    samples.sluice.push(await runSluice());
  }
  if (sides.includes('bullmq')) {
    log(`rep ${r + 1}: bullmq`);
    samples.bullmq.push(await runBullmq());
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const figures = (xs: Sample[]) =>
  Object.fromEntries((Object.keys(xs[0]!) as (keyof Sample)[]).map((k) => [k, { median: median(xs.map((x) => x[k])), perRep: xs.map((x) => x[k]) }]));
const s = samples.sluice.length > 0 ? figures(samples.sluice) : undefined;
const b = samples.bullmq.length > 0 ? figures(samples.bullmq) : undefined;
const ratio = (k: keyof Sample) => (s && b ? Math.round((s[k]!.median / b[k]!.median) * 100) / 100 : undefined);
console.log(
  JSON.stringify(
    {
      bench: 'start-cost',
      at: new Date().toISOString(),
      command: `npx tsx bench/start-cost.ts ${process.argv.slice(2).join(' ')}`.trim(),
      scenario: { rate, lanes, laneRate, globalCap: !noCap, concurrency, warmS: warmMs / 1000, windowS: windowMs / 1000, jobs: jobCount },
      loadAverage: (await import('node:os')).loadavg().map((x) => Math.round(x * 100) / 100),
      sluice: s,
      bullmq: b,
      ...(flags.breakdown ? { commandsPerJobByRep: breakdowns } : {}),
      sluiceOverBullmq: { workerCpuUsPerJob: ratio('workerCpuUsPerJob'), redisCpuUsPerJob: ratio('redisCpuUsPerJob'), workerWritesPerJob: ratio('workerWritesPerJob'), redisCommandsPerJob: ratio('redisCommandsPerJob') },
    },
    null,
    1,
  ),
);
