// Tenants and control: (1) the busy-lane index with 1,000,000 lanes — a page of the busiest lanes, a
// page deep in the index after a cursor, and a page after a cursor whose lane has left; wall-clock p50/
// p99 per call and Redis time per call (INFO commandstats) — and (2) authentication's cost on submit
// and decisions as a same-run req/s ratio (tenant keys vs `auth: none`, interleaved), on a private
// redis-server. The index is filled directly (ZADD of 1,000,000 lane ids with depths 1..1000): the
// listing reads only the index, so how its members got there does not change its cost.
//   npx tsx bench/tenants.ts [--lanes 1000000] [--calls 300] [--duration 3] [--reps 2] [--connections 16]
// Prints one JSON document on stdout; progress on stderr.
import { createHash } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { lanePage, encodeCursor } from '../src/admin/lanes.js';
import { ScriptRegistry } from '../src/redis/scripts.js';
import { Metrics, createSluice, parseRules } from '../src/index.js';
import { createApp } from '../src/express.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop } from './lib/load.js';

const { values: flags } = parseArgs({
  options: {
    lanes: { type: 'string', default: '1000000' },
    calls: { type: 'string', default: '300' },
    duration: { type: 'string', default: '3' },
    reps: { type: 'string', default: '2' },
    connections: { type: 'string', default: '16' },
  },
});
const LANES = Number(flags.lanes);
const CALLS = Number(flags.calls);
const log = (m: string) => process.stderr.write(`${m}\n`);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const r3 = (x: number) => Math.round(x * 1000) / 1000;

async function commandUsec(raw: Redis): Promise<{ calls: number; usec: number }> {
  const info = await raw.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const m of info.matchAll(/cmdstat_(fcall|evalsha|eval):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[2]);
    usec += Number(m[3]);
  }
  return { calls, usec };
}

async function laneIndex(url: string, raw: Redis) {
  const sluice = createSluice({ redis: url, prefix: 'bt' });
  const throttle = sluice.throttle('big', { ratePerSecond: 1, capacity: 1000 });
  const scripts = new ScriptRegistry(sluice.redis);
  log(`filling the index with ${LANES} lanes`);
  for (let i = 0; i < LANES; i += 10_000) {
    const args: (string | number)[] = [];
    for (let j = i; j < Math.min(LANES, i + 10_000); j++) args.push(1 + (Math.imul(j, 2654435761) >>> 0) % 1000, `tenant-${j % 5000}/user-${j}`);
    await raw.zadd(throttle.keys.busy, ...args);
  }
  const memoryBytes = Number(await raw.call('MEMORY', 'USAGE', throttle.keys.busy, 'SAMPLES', '0'));
  const sample = await raw.zrevrange(throttle.keys.busy, 0, LANES - 1, 'WITHSCORES').then(() => undefined).catch(() => undefined);
  void sample;
  const kinds: Record<string, () => Promise<unknown>> = {
    first_page: () => lanePage(scripts, throttle, 100),
    deep_cursor: async () => {
      const rank = Math.floor(Math.random() * (LANES - 200));
      const [lane, depth] = await raw.zrevrange(throttle.keys.busy, rank, rank, 'WITHSCORES');
      return lanePage(scripts, throttle, 100, encodeCursor(Number(depth), lane!));
    },
    vanished_cursor: () => lanePage(scripts, throttle, 100, encodeCursor(1 + Math.floor(Math.random() * 1000), `gone-${Math.random()}`)),
  };
  const out: Record<string, unknown> = { lanes: await raw.zcard(throttle.keys.busy), indexMemoryBytes: memoryBytes, pageSize: 100 };
  for (const [kind, call] of Object.entries(kinds)) {
    await call();
    const before = await commandUsec(raw);
    const wall: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const t = performance.now();
      await call();
      wall.push(performance.now() - t);
    }
    const after = await commandUsec(raw);
    out[kind] = { calls: CALLS, wallP50Ms: r3(pct(wall, 50)), wallP99Ms: r3(pct(wall, 99)), redisUsPerCall: r3((after.usec - before.usec) / Math.max(1, after.calls - before.calls)) };
    log(`${kind}: ${JSON.stringify(out[kind])}`);
  }
  // The script restores the index exactly: the vanished cursors left nothing behind.
  out.indexUnchanged = (await raw.zcard(throttle.keys.busy)) === LANES;
  await sluice.close();
  return out;
}

const KEY = 'bench-tenant-key-0123456789abcdef';
const rulesText = (auth: string) => `${auth}
domains:
  - domain: api
    descriptors:
      - key: user
        rate_limit: { unit: second, requests_per_unit: 1000000000 }
queues:
  - name: q
    rate_per_second: 100000
    capacity: 10000000
    key: body
    handler: { type: module, path: ./none.mjs }
`;

async function authOverhead(url: string) {
  const hash = createHash('sha256').update(KEY).digest('hex');
  const variants = {
    none: rulesText('auth: none'),
    keys: rulesText(`auth:\n  tenants:\n    acme: { keys: [sha256:${hash}] }\n    ${Array.from({ length: 999 }, (_, i) => `t${i}: { keys: [sha256:${createHash('sha256').update(`k${i}`).digest('hex')}] }`).join('\n    ')}`),
  };
  const servers: Record<string, { port: number; close: () => void }> = {};
  for (const [name, text] of Object.entries(variants)) {
    const sluice = createSluice({ redis: url, prefix: `ba${name}` });
    const rules = parseRules(text, { filename: 'rules.yaml' });
    const app = createApp({ sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }) });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    servers[name] = { port: (server.address() as AddressInfo).port, close: () => server.close() };
  }
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const post = (port: number, path: string, body: string) =>
    new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}`, 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 || res.statusCode === 202 ? resolve() : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  let n = 0;
  const routes = {
    decisions: (port: number) => post(port, '/v1/decisions', JSON.stringify({ domain: 'api', descriptors: [{ key: 'user', value: `u${n++ % 1000}` }] })),
    submit: (port: number) => post(port, '/v1/queues/q/jobs', JSON.stringify({ key: `k${n++ % 1000}`, payload: { n } })),
  };
  const out: Record<string, unknown> = {};
  for (const [route, call] of Object.entries(routes)) {
    const runs: Record<string, number[]> = { none: [], keys: [] };
    for (let rep = 0; rep < Number(flags.reps); rep++) {
      for (const name of rep % 2 === 0 ? ['none', 'keys'] : ['keys', 'none']) {
        const r = await closedLoop(() => call(servers[name]!.port), Number(flags.connections), Number(flags.duration) * 1000);
        runs[name]!.push(r.opsPerSec);
        log(`${route} ${name} rep ${rep}: ${r.opsPerSec} req/s (errors ${r.errors})`);
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    out[route] = { noneReqPerSec: runs.none, keysReqPerSec: runs.keys, ratioKeysOverNone: r3(mean(runs.keys!) / mean(runs.none!)) };
  }
  for (const s of Object.values(servers)) s.close();
  agent.destroy();
  return { tenants: 1000, ...out };
}

const redis = await startRedis();
const raw = new Redis(redis.url);
const load = { before: os.loadavg()[0] };
const index = await laneIndex(redis.url, raw);
const auth = await authOverhead(redis.url);
raw.disconnect();
await redis.dispose();
process.stdout.write(JSON.stringify({ bench: 'tenants', at: new Date().toISOString(), cpus: os.cpus().length, loadAvg1m: { ...load, after: os.loadavg()[0] }, laneIndex: index, authOverhead: auth }, null, 2) + '\n');
process.exit(0);
