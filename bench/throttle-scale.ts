// Scale: distinct keys submitted once each (default 1,000,000) while worker processes drain them,
// on a private redis-server. Reports Redis connections (CLIENT LIST) at the start, in the middle and
// at the end, Redis used_memory at its peak and once the lanes expired, and the keys left.
//   npx tsx bench/throttle-scale.ts [--keys 1000000] [--inflight 256] [--worker-procs 2] [--max-seconds 600]
// Throttle: 10/s per key, capacity 5, keepCompleted { count: 0 } (finished jobs leave nothing behind).
// Bounded: submitting stops after --max-seconds, draining and expiry get 120 s each.
// Prints one JSON document on stdout; progress goes to stderr.
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createSluice, type ThrottleConfigInput } from '../src/index.js';
import { startTsProcess, type ChildHandle } from '../test/helpers/processes.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000000' },
    inflight: { type: 'string', default: '256' },
    'worker-procs': { type: 'string', default: '2' },
    'max-seconds': { type: 'string', default: '600' },
  },
});
const N = Number(flags.keys);
const inflight = Number(flags.inflight);
const workerProcs = Number(flags['worker-procs']);
const maxMs = Number(flags['max-seconds']) * 1000;
if (!(N >= 1000 && N <= 2_000_000)) throw new Error('--keys: 1000 .. 2000000');
if (!(inflight >= 1 && inflight <= 1024)) throw new Error('--inflight: 1 .. 1024');
if (!(workerProcs >= 1 && workerProcs <= 4)) throw new Error('--worker-procs: 1 .. 4');
if (!(maxMs >= 10_000 && maxMs <= 1_200_000)) throw new Error('--max-seconds: 10 .. 1200');

const log = (msg: string) => process.stderr.write(`[throttle-scale ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
setTimeout(() => {
  log('watchdog: still running, exiting');
  process.exit(124);
}, maxMs + 400_000).unref();

const CHILD = fileURLToPath(new URL('./lib/throttle-child.ts', import.meta.url));
const PREFIX = 'bs';
const NAME = 'scale';
const config: ThrottleConfigInput = { ratePerSecond: 10, capacity: 5, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const server = await startRedis();
const raw = new Redis(server.port, '127.0.0.1');
const sluice = createSluice({ redis: server.url, prefix: PREFIX });
const throttle = sluice.throttle(NAME, config);
const children: ChildHandle[] = [];

const info = async (section: string, field: string) => Number(new RegExp(`${field}:(\\d+)`).exec(await raw.info(section))?.[1]);
const connections = async () => String(await raw.client('LIST')).trim().split('\n').length;
const startedSoFar = async () =>
  (await Promise.all(children.map(async (k) => (k.send(JSON.stringify({ cmd: 'count' })), (await k.message<{ n: number }>('count')).n)))).reduce(
    (a, b) => a + b,
    0,
  );

/** Keys under this bench's prefix, by kind (lane state vs the throttle's fixed keys), with SCAN. */
async function keysLeft(): Promise<{ total: number; lanes: number; sample: string[] }> {
  let cursor = '0';
  let total = 0;
  let lanes = 0;
  const sample: string[] = [];
  do {
    const [next, batch] = await raw.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 10_000);
    cursor = next;
    total += batch.length;
    for (const k of batch) {
      if (k.includes('}:l:')) lanes++;
      else if (sample.length < 30) sample.push(k);
    }
  } while (cursor !== '0');
  return { total, lanes, sample: sample.sort() };
}

let peakUsedMemory = 0;
let peakAt = 0;
let sampler: NodeJS.Timeout | undefined;
const result: Record<string, unknown> = { bench: 'throttle-scale', keys: N, config, inflight, workerProcs };
try {
  const baseline = await info('memory', 'used_memory');
  for (let i = 0; i < workerProcs; i++) {
    const h = startTsProcess(CHILD, [server.url, PREFIX, NAME, JSON.stringify(config), JSON.stringify({ concurrency: 50, holdCapacity: 200, record: false })]);
    children.push(h);
    await h.message('hello');
  }
  // The throttle publishes its configuration and creates its queue on first use: make both exist
  // before counting connections, then start the workers.
  await throttle.submit('warm', {});
  await Promise.all(children.map(async (k) => (k.send(JSON.stringify({ cmd: 'worker' })), k.message('ready'))));
  const connectionsAtStart = await connections();
  log(`baseline used_memory ${baseline}, connections ${connectionsAtStart}`);

  const t0 = Date.now();
  sampler = setInterval(() => {
    info('memory', 'used_memory').then(
      (m) => {
        if (m > peakUsedMemory) [peakUsedMemory, peakAt] = [m, Date.now() - t0];
      },
      () => undefined,
    );
  }, 500);

  let next = 0;
  let refused = 0;
  let errors = 0;
  let connectionsAtMiddle = 0;
  let lastLog = Date.now();
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (next < N && Date.now() - t0 < maxMs) {
        const i = next++;
        try {
          const r = await throttle.submit(`k${i}`, { i });
          if (!r.admitted) refused++;
        } catch (error) {
          if (++errors <= 3) log(`submit error: ${(error as Error).message}`);
        }
        if (i === N >> 1) connectionsAtMiddle = await connections();
        if (Date.now() - lastLog > 10_000) {
          lastLog = Date.now();
          log(`${i} submitted (${Math.round(i / ((Date.now() - t0) / 1000))}/s), used_memory ${await info('memory', 'used_memory')}`);
        }
      }
    }),
  );
  const submitted = Math.min(next, N);
  const submitMs = Date.now() - t0;
  log(`${submitted} submitted in ${submitMs} ms (${refused} refused, ${errors} errors)`);

  const drainDeadline = Date.now() + 120_000;
  let started = 0;
  while (Date.now() < drainDeadline) {
    started = await startedSoFar();
    if (started >= submitted + 1 - refused - errors) break;
    await sleep(1000);
  }
  const drainMs = Date.now() - t0;
  const connectionsAtEnd = await connections();
  clearInterval(sampler);
  const usedAtDrained = await info('memory', 'used_memory');
  log(`${started} started after ${drainMs} ms; used_memory ${usedAtDrained}, peak ${peakUsedMemory}`);

  // Lanes live until their last slot is past, plus one second: wait for DBSIZE to settle.
  const expiryStart = Date.now();
  let laneKeys = -1;
  while (Date.now() - expiryStart < 120_000) {
    const left = await keysLeft();
    laneKeys = left.lanes;
    if (laneKeys === 0) break;
    await sleep(2000);
  }
  const left = await keysLeft();
  const usedAfterExpiry = await info('memory', 'used_memory');
  Object.assign(result, {
    submitted,
    refused,
    errors,
    submitMs,
    submitsPerSec: Math.round(submitted / (submitMs / 1000)),
    started,
    drainedAfterMs: drainMs,
    connections: { atStart: connectionsAtStart, atMiddle: connectionsAtMiddle, atEnd: connectionsAtEnd },
    usedMemory: {
      baseline,
      peak: peakUsedMemory,
      peakAtMs: peakAt,
      peakOverBaselinePerKey: Math.round((peakUsedMemory - baseline) / submitted),
      atDrained: usedAtDrained,
      afterLanesExpired: usedAfterExpiry,
      afterLanesExpiredOverBaseline: usedAfterExpiry - baseline,
      redisPeakReported: await info('memory', 'used_memory_peak'),
    },
    laneExpiryMs: Date.now() - expiryStart,
    keysLeft: left,
    busySetMembers: await raw.zcard(throttle.keys.busy),
  });
} finally {
  clearInterval(sampler);
  await Promise.all(
    children.map(async (k) => {
      if (k.child.exitCode !== null) return;
      k.send(JSON.stringify({ cmd: 'close' }));
      await Promise.race([k.exited, sleep(10_000)]);
      if (k.child.exitCode === null) k.child.kill('SIGKILL');
    }),
  );
  await sluice.close();
  raw.disconnect();
  await server.dispose();
}
process.stdout.write(JSON.stringify(result, null, 2) + '\n');
