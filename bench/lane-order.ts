// A lane's order across worker processes whose handlers are slower than the lane: `--jobs` jobs of one
// lane submitted one after another (a backlog), then `--procs` worker processes (bench/lib/throttle-child.ts)
// with `--concurrency` handlers each that run `--duration` ms, against a lane of `--rate`/s. Handlers that
// cannot keep up with the lane (procs x concurrency / duration below the rate) are the case: a process that
// held jobs for their instants met them with every handler busy, and its late jobs took starts behind the
// jobs another process held.
// Per run, in the order the handlers began: jobs that began after a job submitted later than them
// ("behind"; also by the slots the gate gave), adjacent pairs out of submit order ("inversions"), the most
// starts in any 1 s (never over the rate), and starts per second against what the handlers can run. With --base DIR the same runs on another
// checkout (its bench/lib/throttle-child.ts, src/ and lua/, on a redis-server of its own), alternated rep by rep.
// --cap N puts the throttle under a global cap of N/s.
//   npx tsx bench/lane-order.ts [--rate 100] [--concurrency 1] [--duration 30] [--jobs 120] [--procs 2] [--reps 3] [--cap N] [--base DIR]
// Prints one JSON document on stdout; progress goes to stderr.
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createSluice, type Sluice, type ThrottleConfigInput } from '../src/index.js';
import { startTsProcess, type ChildHandle } from '../test/helpers/processes.js';
import { startRedis, type RedisServer } from '../test/helpers/redis-server.js';
import { achievedRate, maxInWindow, quantile } from '../test/helpers/throttle-stats.js';

const { values: flags } = parseArgs({
  options: {
    rate: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '1' },
    duration: { type: 'string', default: '30' },
    jobs: { type: 'string', default: '120' },
    procs: { type: 'string', default: '2' },
    reps: { type: 'string', default: '3' },
    cap: { type: 'string' },
    base: { type: 'string' },
  },
});
const rate = Number(flags.rate);
const concurrency = Number(flags.concurrency);
const durationMs = Number(flags.duration);
const jobs = Number(flags.jobs);
const procs = Number(flags.procs);
const reps = Number(flags.reps);
/** A global cap on the throttle (its own lanes then start under it), or none. */
const cap = flags.cap === undefined ? undefined : Number(flags.cap);
if (cap !== undefined && !(cap >= 1 && cap <= 10_000)) throw new Error('--cap: 1 .. 10000');
if (!(rate >= 1 && rate <= 10_000)) throw new Error('--rate: 1 .. 10000');
if (!(concurrency >= 1 && concurrency <= 100)) throw new Error('--concurrency: 1 .. 100');
if (!(durationMs >= 0 && durationMs <= 1_000)) throw new Error('--duration: 0 .. 1000 ms');
if (!(jobs >= 2 && jobs <= 5_000)) throw new Error('--jobs: 2 .. 5000');
if (!(procs >= 1 && procs <= 8)) throw new Error('--procs: 1 .. 8');
if (!(reps >= 1 && reps <= 20)) throw new Error('--reps: 1 .. 20');

const log = (msg: string) => process.stderr.write(`[lane-order ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
/** What the handlers can start per second, and how long the run takes at the slower of that and the rate. */
const handlerRate = durationMs > 0 ? (procs * concurrency * 1000) / durationMs : Infinity;
const expectedMs = (jobs / Math.min(rate, handlerRate)) * 1000;
const trees: { name: string; dir: string }[] = [{ name: 'this', dir: join(import.meta.dirname, '..') }];
if (flags.base) trees.push({ name: 'base', dir: flags.base });
const budgetMs = reps * trees.length * (expectedMs * 3 + 20_000) + 60_000;
setTimeout(() => {
  log(`watchdog: still running after ${budgetMs} ms, exiting`);
  process.exit(124);
}, budgetMs).unref();

const PREFIX = 'order';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Start = [number, number, number, string, string];
const round2 = (x: number) => Math.round(x * 100) / 100;

const children: ChildHandle[] = [];
process.on('exit', () => {
  for (const c of children) c.child.kill('SIGKILL');
});

/** Each tree on a redis-server of its own: the two trees' script libraries would replace each other's. */
const servers = new Map<string, { server: RedisServer; sluice: Sluice }>();
for (const t of trees) {
  const server = await startRedis();
  servers.set(t.name, { server, sluice: createSluice({ redis: server.url, prefix: PREFIX }) });
}

async function run(tree: { name: string; dir: string }, rep: number) {
  const { server, sluice } = servers.get(tree.name)!;
  const config: ThrottleConfigInput = { ratePerSecond: rate, capacity: jobs + 10, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000, ...(cap !== undefined ? { globalRatePerSecond: cap } : {}) };
  const name = `order-${rep}`;
  const throttle = sluice.throttle(name, config);
  // One after another: the submit order is the lane's order.
  const order = new Map<string, number>();
  for (let i = 0; i < jobs; i++) {
    const r = await throttle.submit('k', { i });
    if (!r.admitted) throw new Error(`refused: ${JSON.stringify(r)}`);
    order.set(r.jobId, i);
  }
  const child = join(tree.dir, 'bench/lib/throttle-child.ts');
  const kids = await Promise.all(
    Array.from({ length: procs }, async () => {
      const h = startTsProcess(child, [server.url, PREFIX, name, JSON.stringify(config), JSON.stringify({ concurrency, durationMs })]);
      children.push(h);
      await h.message('hello');
      return h;
    }),
  );
  await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'worker' })), k.message('ready'))));
  const deadline = Date.now() + expectedMs * 3 + 10_000;
  for (;;) {
    const counts = await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'count' })), (await k.message<{ n: number }>('count')).n)));
    if (counts.reduce((a, b) => a + b, 0) >= jobs || Date.now() > deadline) break;
    await sleep(100);
  }
  const reports = await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'report' })), k.message<{ starts: Start[]; deferrals: number }>('report'))));
  await Promise.all(kids.map(async (k) => (k.send(JSON.stringify({ cmd: 'close' })), k.exited)));
  const starts = reports.flatMap((r) => r.starts).sort((a, b) => a[0] - b[0]);
  const { behind, inversions, furthest, behindAt } = disorder(starts.map((s) => order.get(s[4]) ?? -1));
  const t0 = starts[0]?.[0] ?? 0;
  // By the slots the gate gave (the schedule), apart from when each process's handler began: across
  // processes two starts closer than their wake-up jitter (a 500/s lane: 2 ms) can begin in either order.
  const bySlot = disorder([...starts].sort((a, b) => a[1] - b[1]).map((s) => order.get(s[4]) ?? -1));
  const times = starts.map((s) => s[0]);
  return {
    tree: tree.name,
    rep,
    started: starts.length,
    behind,
    inversions,
    /** The most places a job began behind its turn. */
    furthestBehind: furthest,
    behindBySlot: bySlot.behind,
    /** When they began, ms after the first start (at most 40 listed). */
    behindAtMs: behindAt.slice(0, 40).map((i) => Math.round(starts[i]![0] - t0)),
    maxIn1s: maxInWindow(times, 1000),
    startsPerSecond: round2(achievedRate(times) ?? 0),
    gateDeferrals: reports.reduce((n, r) => n + r.deferrals, 0),
  };
}

/** Jobs placed after a job submitted later than them, adjacent pairs out of order, and the most places behind. */
function disorder(places: number[]): { behind: number; inversions: number; furthest: number; behindAt: number[] } {
  let behind = 0;
  const behindAt: number[] = [];
  let inversions = 0;
  let highest = -1;
  let furthest = 0;
  for (let i = 0; i < places.length; i++) {
    const p = places[i]!;
    if (p < highest) {
      behind++;
      behindAt.push(i);
      furthest = Math.max(furthest, highest - p);
    }
    if (i > 0 && p < places[i - 1]!) inversions++;
    highest = Math.max(highest, p);
  }
  return { behind, inversions, furthest, behindAt };
}

const loadBefore = loadavg()[0]!;
const rows: Awaited<ReturnType<typeof run>>[] = [];
for (let rep = 1; rep <= reps; rep++) {
  const turn = rep % 2 === 1 ? trees : [...trees].reverse();
  for (const t of turn) {
    const row = await run(t, rep);
    log(`${t.name} rep ${rep}: ${row.started} started, ${row.behind} behind (by slot ${row.behindBySlot}, furthest ${row.furthestBehind} places), ${row.inversions} inversions, max in 1 s ${row.maxIn1s}, ${row.startsPerSecond}/s`);
    rows.push(row);
  }
}
const summary = trees.map((t) => {
  const mine = rows.filter((r) => r.tree === t.name);
  const med = (xs: number[]) => quantile([...xs].sort((a, b) => a - b), 0.5);
  return {
    tree: t.name,
    runs: mine.length,
    runsInOrder: mine.filter((r) => r.behind === 0).length,
    behindPerRun: mine.map((r) => r.behind),
    behindMedian: med(mine.map((r) => r.behind)),
    behindBySlotPerRun: mine.map((r) => r.behindBySlot),
    runsOverRate: mine.filter((r) => r.maxIn1s > rate).length,
    startsPerSecondMedian: med(mine.map((r) => r.startsPerSecond)),
  };
});
for (const { server, sluice } of servers.values()) {
  await sluice.close();
  await server.stop();
}
process.stdout.write(
  JSON.stringify(
    {
      bench: 'lane-order',
      at: new Date().toISOString(),
      command: `npx tsx bench/lane-order.ts ${process.argv.slice(2).join(' ')}`.trim(),
      rate,
      cap: cap ?? null,
      concurrency,
      durationMs,
      jobs,
      procs,
      handlerRate: Number.isFinite(handlerRate) ? round2(handlerRate) : null,
      loadavg: { before: round2(loadBefore), after: round2(loadavg()[0]!) },
      summary,
      rows,
    },
    null,
    1,
  ) + '\n',
);
process.exit(0);
