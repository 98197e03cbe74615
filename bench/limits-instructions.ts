// Redis instructions per all-or-nothing request over three limits (the `rules3` request of bench/http.ts:
// a token bucket per client, a sliding counter per route and client, a fixed window per route), counted
// by running the bench's private redis-server under valgrind's callgrind: the same requests with --n1 and
// --n2 of them, (Ir(n2) - Ir(n1)) / (n2 - n1), so the start, the warm-up and the script loading cancel
// out. A count of user-space instructions does not move with the machine's load (rates and µs do, by
// ±30 % on a shared 2-core machine); it does not weigh cache misses. limitAll() in a closed loop of 50,
// batched per event-loop turn as the middleware's calls are (Redis under callgrind is the slow side, so
// batches run full: MAX_BATCH).
//   npx tsx bench/limits-instructions.ts [--clients 1,10000] [--n1 500] [--n2 2500] [--base DIR] [--one token-bucket|sliding-counter|fixed-window]
// --one: one decision of that limit per request (limit(), batched as the middleware's one-policy calls) instead of the three.
// --clients: distinct callers (1: one hot client, the http bench's case; many: every request its own
// client keys, only the route's key shared). --base DIR: the same on another checkout (its src/ and lua/).
// Needs valgrind. Prints one JSON document on stdout; progress on stderr.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startRedis } from '../test/helpers/redis-server.js';

type Index = typeof import('../src/index.js');
type AllOrNothing = typeof import('../src/limiters/all-or-nothing.js');

const { values: flags } = parseArgs({
  options: {
    clients: { type: 'string', default: '1,10000' },
    n1: { type: 'string', default: '500' },
    n2: { type: 'string', default: '2500' },
    base: { type: 'string' },
    one: { type: 'string' },
  },
});
const clientCounts = flags.clients.split(',').map(Number);
const n1 = Number(flags.n1);
const n2 = Number(flags.n2);
const ONE = ['token-bucket', 'sliding-counter', 'fixed-window'];
const one = flags.one === undefined ? -1 : ONE.indexOf(flags.one);
if (flags.one !== undefined && one < 0) throw new Error(`--one: one of ${ONE.join(', ')}`);
if (!clientCounts.every((c) => Number.isInteger(c) && c >= 1 && c <= 1_000_000)) throw new Error('--clients: integers 1 .. 1000000');
if (!(n1 >= 100 && n2 > n1 && n2 <= 100_000)) throw new Error('--n1, --n2: 100 <= n1 < n2 <= 100000');
const log = (msg: string) => process.stderr.write(`[limits-instructions ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

// redis-server, as startRedis spawns it, is valgrind running the real one.
const real = execFileSync('bash', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
execFileSync('bash', ['-c', 'command -v valgrind']);
const work = mkdtempSync(join(tmpdir(), 'sluice-cg-'));
mkdirBin();
process.env.PATH = `${join(work, 'bin')}:${process.env.PATH}`;

function mkdirBin(): void {
  execFileSync('mkdir', ['-p', join(work, 'bin')]);
  const wrapper = join(work, 'bin', 'redis-server');
  writeFileSync(wrapper, `#!/usr/bin/env bash\nexec valgrind --tool=callgrind --callgrind-out-file=${work}/cg.%p -q ${real} "$@"\n`);
  chmodSync(wrapper, 0o755);
}

/** Instructions the server ran in all, after `n` requests of `clients` callers through `tree`'s code. */
async function count(tree: string, clients: number, n: number): Promise<number> {
  for (const f of readdirSync(work)) if (f.startsWith('cg.')) rmSync(join(work, f));
  const url = (p: string) => pathToFileURL(join(tree, p)).href;
  const index = (await import(url('src/index.ts'))) as Index;
  const { limitAll } = (await import(url('src/limiters/all-or-nothing.ts'))) as AllOrNothing;
  const server = await startRedis();
  const sluice = index.createSluice({ redis: server.url, prefix: 'li' });
  const limiters = [
    sluice.limiter({ name: 'li-tb', algorithm: 'token-bucket', capacity: 1e9, refillPerSecond: 1e6, timeoutMs: 60_000 }),
    sluice.limiter({ name: 'li-sc', algorithm: 'sliding-counter', limit: 1e9, windowMs: 60_000, timeoutMs: 60_000 }),
    sluice.limiter({ name: 'li-fw', algorithm: 'fixed-window', limit: 1e9, windowMs: 60_000, timeoutMs: 60_000 }),
  ];
  const request = (i: number) => {
    const client = `c${i % clients}`;
    if (one >= 0) return limiters[one]!.limit(client);
    return limitAll([
      { limiter: limiters[0]!, key: client, options: {} },
      { limiter: limiters[1]!, key: `orders|${client}`, options: {} },
      { limiter: limiters[2]!, key: 'orders', options: {} },
    ]);
  };
  await request(0); // connected and the scripts loaded: every later request can batch
  let issued = 0;
  const loop = async () => {
    while (issued < n) await request(issued++);
  };
  await Promise.all(Array.from({ length: 50 }, loop));
  await sluice.close();
  await server.dispose(); // SIGTERM: callgrind writes its totals as the server exits
  const file = readdirSync(work).find((f) => f.startsWith('cg.'));
  if (!file) throw new Error('callgrind wrote no profile');
  const totals = /^totals:\s+(\d+)/m.exec(readFileSync(join(work, file), 'utf8'));
  if (!totals) throw new Error(`no totals in ${file}`);
  return Number(totals[1]);
}

const trees: [string, string][] = [['this', join(import.meta.dirname, '..')]];
if (flags.base) trees.push(['base', flags.base]);
const rows = [];
try {
  for (const clients of clientCounts) {
    for (const [name, dir] of trees) {
      log(`${name}, ${clients} client(s): ${n1} then ${n2} requests under callgrind`);
      const a = await count(dir, clients, n1);
      const b = await count(dir, clients, n2);
      rows.push({ tree: name, clients, redisInstructionsPerRequest: Math.round((b - a) / (n2 - n1)) });
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
console.log(JSON.stringify({ bench: 'limits-instructions', at: new Date().toISOString(), command: `npx tsx bench/limits-instructions.ts ${process.argv.slice(2).join(' ')}`.trim(), n: [n1, n2], limits: one >= 0 ? [`${ONE[one]} per client`] : ['token-bucket per client', 'sliding-counter per route and client', 'fixed-window per route'], rows }, null, 1));
