// Where an admission's Redis time goes: `--n` submits (one key, or `--keys` keys at random), one at a
// time or `--inflight` at once, on a private redis-server, with INFO commandstats before and after:
// per command called (the script itself and each command it runs), calls and µs per admission.
//   npx tsx bench/throttle-admit-profile.ts [--n 20000] [--inflight 1] [--keys 1] [--bull: a bare BullMQ queue.add instead] [--base DIR]
// --base DIR: the submits of another checkout of sluice (its src/ imported here, its lua/ loaded by its own
// registry), for a before/after of the same measure. The µs are commandstats', wall time inside Redis: on a
// loaded machine run both trees back to back, several times.
// Prints one JSON document on stdout.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Queue } from 'bullmq';
import * as here from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop } from './lib/load.js';

const { values: flags } = parseArgs({
  options: {
    n: { type: 'string', default: '20000' },
    inflight: { type: 'string', default: '1' },
    keys: { type: 'string', default: '1' },
    bull: { type: 'boolean', default: false },
    base: { type: 'string' },
  },
});
const n = Number(flags.n);
const inflight = Number(flags.inflight);
const keys = Number(flags.keys);

/** INFO commandstats as command -> { calls, usec }. */
async function commandStats(raw: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const out = new Map<string, { calls: number; usec: number }>();
  for (const line of (await raw.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  }
  return out;
}

setTimeout(() => {
  process.stderr.write('watchdog: still running after 120 s, exiting\n');
  process.exit(124);
}, 120_000).unref();
const log = (m: string) => process.stderr.write(`[profile] ${m}\n`);
const server = await startRedis();
const raw = new Redis(server.port, '127.0.0.1');
const { createSluice } = flags.base ? ((await import(pathToFileURL(join(flags.base, 'src/index.ts')).href)) as typeof here) : here;
const sluice = createSluice({ redis: server.url, prefix: 'prof' });
const throttle = sluice.throttle('p', { ratePerSecond: keys > 1 ? 10 : 1000, capacity: keys > 1 ? 100 : 10_000_000, submitTimeoutMs: 30_000 });
const bullConnection = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: null });
const queue = new Queue('bare', { connection: bullConnection, prefix: 'bull' });
await queue.waitUntilReady();
let seq = 0;
const op = flags.bull
  ? () => queue.add('j', { i: seq++ })
  : async () => {
      const r = await throttle.submit(keys > 1 ? `u${(Math.random() * keys) | 0}` : 'hot', { i: seq++ });
      if (!r.admitted) throw new Error(`refused: ${r.reason}`);
    };
log('warm');
await op();
log('run');
const before = await commandStats(raw);
const cpu0 = process.cpuUsage();
const result = await closedLoop(op, inflight, 100_000, n);
const cpu = process.cpuUsage(cpu0);
const after = await commandStats(raw);
const perOp: Record<string, { callsPerOp: number; usPerOp: number; usPerCall: number }> = {};
let total = 0;
for (const [name, a] of after) {
  const b = before.get(name) ?? { calls: 0, usec: 0 };
  const calls = a.calls - b.calls;
  if (calls <= 0 || name === 'info') continue;
  const usec = a.usec - b.usec;
  perOp[name] = { callsPerOp: +(calls / result.ops).toFixed(3), usPerOp: +(usec / result.ops).toFixed(2), usPerCall: +(usec / calls).toFixed(2) };
  // The script's own entry (FCALL once its library is loaded, EVALSHA before) holds its commands' time too.
  if (name.startsWith('eval') || name.startsWith('fcall') || flags.bull) total = Math.max(total, usec / result.ops);
}
process.stdout.write(
  `${JSON.stringify({ n: result.ops, inflight, keys, bull: flags.bull, scriptUsPerOp: +total.toFixed(2), nodeUsPerOp: +((cpu.user + cpu.system) / result.ops).toFixed(1), perOp }, null, 1)}\n`,
);
await queue.close();
bullConnection.disconnect();
await sluice.close();
raw.disconnect();
await server.dispose();
