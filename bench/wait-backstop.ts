// Long-polls that wait a long time: N `throttle.waitForJob` calls in one process on N queued jobs that do
// not finish (no worker runs), the way `GET /v1/queues/{queue}/jobs/{id}?wait=30` waits. What a process
// and Redis spend on them while nothing happens is the backstop for a lost final event (the job's status
// read again every few seconds). Measured over --seconds after a warm-up: the process's CPU (fraction of a
// core), Redis's CPU (INFO cpu) and the commands Redis ran per second (INFO commandstats, inside scripts too).
// A private redis-server, started and stopped here.
//   npx tsx bench/wait-backstop.ts [--waiters 1000,20000] [--seconds 11] [--reps 2] [--base DIR]
// --base DIR: another checkout of sluice (node_modules in place): its src/ waits too, alternated rep by
// rep with this tree's, each on a redis-server of its own: before/after from the same minutes.
// Prints one JSON document on stdout; progress goes to stderr.
import { setMaxListeners } from 'node:events';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis-server.js';
import { redisCpuSeconds } from './lib/load.js';

const { values: flags } = parseArgs({
  options: {
    waiters: { type: 'string', default: '1000,20000' },
    seconds: { type: 'string', default: '11' },
    reps: { type: 'string', default: '2' },
    base: { type: 'string' },
  },
});
const counts = flags.waiters.split(',').map(Number);
const seconds = Number(flags.seconds);
const reps = Number(flags.reps);
if (!counts.every((n) => Number.isInteger(n) && n >= 1 && n <= 100_000)) throw new Error('--waiters: 1 .. 100000 each');
if (!(seconds >= 1 && seconds <= 120 && reps >= 1 && reps <= 9)) throw new Error('--seconds 1..120, --reps 1..9');
const log = (msg: string) => process.stderr.write(`${msg}\n`);

type Index = typeof import('../src/index.js');
const trees: [string, string][] = [['this', join(import.meta.dirname, '..')]];
if (flags.base) trees.push(['base', flags.base]);
const indexes = new Map<string, Index>();
for (const [name, dir] of trees) indexes.set(name, (await import(pathToFileURL(join(dir, 'src/index.ts')).href)) as Index);

/** Calls of each Redis command so far (INFO commandstats). */
async function commandCalls(raw: Redis): Promise<Map<string, number>> {
  const calls = new Map<string, number>();
  for (const m of (await raw.info('commandstats')).matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+)/gm)) calls.set(m[1]!, Number(m[2]));
  return calls;
}

async function run(tree: string, waiters: number) {
  const server = await startRedis();
  const raw = new Redis(server.port, '127.0.0.1');
  const sluice = indexes.get(tree)!.createSluice({ redis: server.url, prefix: 'wb' });
  const abort = new AbortController();
  // One signal for every wait (each adds a listener).
  setMaxListeners(0, abort.signal);
  try {
    // 100 keys, a tenth of a start per second each: nothing is handed out (no worker runs anyway).
    const throttle = sluice.throttle('wb', { ratePerSecond: 0.1, capacity: 100_000 });
    await throttle.ready();
    const ids: string[] = [];
    for (let i = 0; i < waiters; i += 256) {
      const batch = await Promise.all(Array.from({ length: Math.min(256, waiters - i) }, (_, k) => throttle.submit(`k${(i + k) % 100}`, { i: i + k })));
      for (const r of batch) {
        if (!r.admitted) throw new Error(`refused: ${r.reason}`);
        ids.push(r.jobId);
      }
    }
    let ended = 0;
    let failed = 0;
    // Long-polls arrive over time, 500 every 100 ms: their first status reads do not all meet at once.
    for (let i = 0; i < ids.length; i += 500) {
      for (const id of ids.slice(i, i + 500)) {
        void throttle.waitForJob(id, { timeoutMs: 120_000, signal: abort.signal }).then(
          () => void ended++,
          () => void failed++,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    // Warm-up: every wait's first status read, and the event reader's first XREAD.
    await new Promise((r) => setTimeout(r, 3_000));
    const calls0 = await commandCalls(raw);
    const redis0 = await redisCpuSeconds(() => raw.info('cpu'));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const cpu = process.cpuUsage(cpu0);
    const elapsed = (performance.now() - t0) / 1000;
    const redis = (await redisCpuSeconds(() => raw.info('cpu'))) - redis0;
    const calls1 = await commandCalls(raw);
    const perSecond: Record<string, number> = {};
    let total = 0;
    for (const [name, n] of calls1) {
      const d = (n - (calls0.get(name) ?? 0)) / elapsed;
      total += d;
      if (d >= 1 && name !== 'info') perSecond[name] = Math.round(d);
    }
    if (ended + failed > 0) throw new Error(`${ended} waits ended and ${failed} failed before the measurement did`);
    return {
      tree,
      waiters,
      seconds: Math.round(elapsed * 100) / 100,
      processCpu: Math.round(((cpu.user + cpu.system) / 1e6 / elapsed) * 1000) / 1000,
      redisCpu: Math.round((redis / elapsed) * 1000) / 1000,
      redisCommandsPerSecond: Math.round(total),
      commands: perSecond,
    };
  } finally {
    abort.abort();
    await new Promise((r) => setTimeout(r, 200));
    await sluice.close();
    raw.disconnect();
    await server.dispose();
  }
}

const rows = [];
for (let rep = 0; rep < reps; rep++) {
  for (const waiters of counts) {
    for (const [tree] of trees) {
      const row = await run(tree, waiters);
      log(`${tree} ${waiters} waiters rep ${rep}: process ${row.processCpu} core, redis ${row.redisCpu} core, ${row.redisCommandsPerSecond} commands/s`);
      rows.push({ rep, ...row });
    }
  }
}
process.stdout.write(`${JSON.stringify({ bench: 'wait-backstop', at: new Date().toISOString(), command: `npx tsx bench/wait-backstop.ts ${process.argv.slice(2).join(' ')}`.trim(), rows }, null, 1)}\n`);
process.exit(0);
