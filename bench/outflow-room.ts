// How much room the pacing leaves in a 1 s window, measured where work starts: one lane drained at
// `--rate` by worker processes (bench/lib/throttle-child.ts, which record the wall-clock instant of each
// handler's first line), with `--load` busy processes beside them (loopback-free CPU burners, bounded by
// the run), for each `--margins` value of `pacingMargin`, alternated rep by rep.
// Per run: the most starts in any half-open 1 s window, the shortest span of rate + 1 consecutive starts
// ("room": that span less 1 s; below 0, rate + 1 starts fell inside one second), the achieved rate, and
// how late the handlers began against their slots.
// Why: slots are spaced `pacingMargin` wider than the rate, and a start later than the lateness tolerance
// takes a fresh slot. A start that passes that check can still begin later: the process preempted by the
// OS (two cores, several busy processes), or a collection, between the check and the handler's first line.
// The room says how much of that a window can absorb.
// With --send-within MS, each handler prepares its call for a random 0 to MS ms, then checks
// `job.assertOnTime()` (a call later than the send headroom, 10 ms by default, goes back to its lane) and
// the figures are those of the instants the calls would leave, what an upstream counts.
//   npx tsx bench/outflow-room.ts [--rate 100] [--jobs 600] [--procs 2] [--load 2] [--reps 3] [--margins 0.01,0.015] [--send-within 0]
// Prints one JSON document on stdout; progress goes to stderr.
import { spawn, type ChildProcess } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createSluice, type ThrottleConfigInput } from '../src/index.js';
import { startTsProcess, type ChildHandle } from '../test/helpers/processes.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { achievedRate, maxInWindow, quantile, spreadOf } from '../test/helpers/throttle-stats.js';

const { values: flags } = parseArgs({
  options: {
    rate: { type: 'string', default: '100' },
    jobs: { type: 'string', default: '600' },
    procs: { type: 'string', default: '2' },
    load: { type: 'string', default: '2' },
    reps: { type: 'string', default: '3' },
    margins: { type: 'string', default: '0.01,0.015' },
    'send-within': { type: 'string', default: '0' },
  },
});
const rate = Number(flags.rate);
const jobs = Number(flags.jobs);
const procs = Number(flags.procs);
const load = Number(flags.load);
const reps = Number(flags.reps);
const margins = flags.margins.split(',').map(Number);
const sendWithinMs = Number(flags['send-within']);
if (!(rate >= 2 && rate <= 2_000)) throw new Error('--rate: 2 .. 2000');
if (!(jobs > rate + 1 && jobs <= 20_000)) throw new Error('--jobs: rate + 2 .. 20000');
if (!(procs >= 1 && procs <= 8)) throw new Error('--procs: 1 .. 8');
if (!(load >= 0 && load <= 8)) throw new Error('--load: 0 .. 8');
if (!(reps >= 1 && reps <= 20)) throw new Error('--reps: 1 .. 20');
if (!margins.every((m) => m >= 0 && m <= 0.5)) throw new Error('--margins: each in [0, 0.5]');
if (!(sendWithinMs >= 0 && sendWithinMs <= 1_000)) throw new Error('--send-within: ms in [0, 1000]');

const log = (msg: string) => process.stderr.write(`[outflow-room ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const drainMs = (jobs / rate) * 1000;
const budgetMs = reps * margins.length * (drainMs * 2 + 15_000) + 60_000;
setTimeout(() => {
  log(`watchdog: still running after ${budgetMs} ms, exiting`);
  process.exit(124);
}, budgetMs).unref();

const CHILD = fileURLToPath(new URL('./lib/throttle-child.ts', import.meta.url));
const PREFIX = 'room';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Start = [number, number, number, string, string];

/** CPU burners for `ms`: each spins until its deadline, then exits by itself. */
function burners(n: number, ms: number): ChildProcess[] {
  const code = `const end = Date.now() + ${Math.round(ms)}; while (Date.now() < end) {}`;
  return Array.from({ length: n }, () => spawn(process.execPath, ['-e', code], { stdio: 'ignore' }));
}

const round2 = (x: number) => Math.round(x * 100) / 100;

const server = await startRedis();
const sluice = createSluice({ redis: server.url, prefix: PREFIX });
const children: ChildHandle[] = [];
const spinning: ChildProcess[] = [];
const cleanup = () => {
  for (const c of children) c.child.kill('SIGKILL');
  for (const b of spinning) b.kill('SIGKILL');
};
process.on('exit', cleanup);

async function run(margin: number, rep: number) {
  const config: ThrottleConfigInput = { ratePerSecond: rate, capacity: jobs + 10, pacingMargin: margin, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000 };
  const name = `room-${rep}-${String(margin).replace('.', '_')}`;
  const throttle = sluice.throttle(name, config);
  const kids = await Promise.all(
    Array.from({ length: procs }, async () => {
      const h = startTsProcess(CHILD, [server.url, PREFIX, name, JSON.stringify(config), JSON.stringify({ concurrency: 10, ...(sendWithinMs > 0 ? { sendWithinMs } : {}) })]);
      children.push(h);
      await h.message('hello');
      h.send(JSON.stringify({ cmd: 'worker' }));
      await h.message('ready');
      return h;
    }),
  );
  const burning = burners(load, drainMs + 3_000);
  spinning.push(...burning);
  let next = 0;
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (next < jobs) {
        next++;
        const r = await throttle.submit('k', {});
        if (!r.admitted) throw new Error(`refused: ${JSON.stringify(r)}`);
      }
    }),
  );
  const deadline = Date.now() + drainMs * 2 + 10_000;
  for (;;) {
    const counts = await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'count' })), (await k.message<{ n: number }>('count')).n)));
    if (counts.reduce((a, b) => a + b, 0) >= jobs || Date.now() > deadline) break;
    await sleep(250);
  }
  const reports = await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'report' })), k.message<{ starts: Start[]; sends: number[]; deferrals: number }>('report'))));
  await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'close' })), k.exited)));
  for (const b of burning) b.kill('SIGKILL');
  const starts = reports.flatMap((r) => r.starts).sort((a, b) => a[0] - b[0]);
  // What an upstream counts: the calls' instants when they are made, else the handlers' starts.
  const times = sendWithinMs > 0 ? reports.flatMap((r) => r.sends).sort((a, b) => a - b) : starts.map((s) => s[0]);
  let minSpan = Infinity;
  for (let i = 0; i + rate < times.length; i++) minSpan = Math.min(minSpan, times[i + rate]! - times[i]!);
  return {
    margin,
    rep,
    started: starts.length,
    maxIn1s: maxInWindow(times, 1000),
    roomMs: round2(minSpan - 1000),
    achievedOverRate: round2((achievedRate(times) ?? 0) / rate),
    lateMs: spreadOf(starts.map((s) => s[0] - s[1])),
    gateDeferrals: reports.reduce((n, r) => n + r.deferrals, 0),
  };
}

const loadBefore = loadavg()[0]!;
const rows: Awaited<ReturnType<typeof run>>[] = [];
for (let rep = 1; rep <= reps; rep++) {
  // Alternated, and the order turned every rep, so that neither margin always runs first.
  const order = rep % 2 === 1 ? margins : [...margins].reverse();
  for (const m of order) {
    const row = await run(m, rep);
    log(`margin ${m} rep ${rep}: max in 1 s ${row.maxIn1s}, room ${row.roomMs} ms, achieved ${row.achievedOverRate}, late p99 ${row.lateMs.p99} max ${row.lateMs.max}`);
    rows.push(row);
  }
}
const summary = margins.map((m) => {
  const mine = rows.filter((r) => r.margin === m);
  const rooms = mine.map((r) => r.roomMs).sort((a, b) => a - b);
  return {
    margin: m,
    runs: mine.length,
    runsOverRate: mine.filter((r) => r.maxIn1s > rate).length,
    roomMsMin: rooms[0],
    roomMsMedian: quantile(rooms, 0.5),
    achievedOverRateMedian: quantile(mine.map((r) => r.achievedOverRate).sort((a, b) => a - b), 0.5),
    lateMsMax: Math.max(...mine.map((r) => r.lateMs.max ?? 0)),
  };
});
await sluice.close();
await server.stop();
process.stdout.write(
  JSON.stringify(
    {
      bench: 'outflow-room',
      at: new Date().toISOString(),
      command: `npx tsx bench/outflow-room.ts ${process.argv.slice(2).join(' ')}`.trim(),
      rate,
      jobs,
      procs,
      load,
      sendWithinMs,
      loadavg: { before: round2(loadBefore), after: round2(loadavg()[0]!) },
      summary,
      rows,
    },
    null,
    1,
  ) + '\n',
);
process.exit(0);
