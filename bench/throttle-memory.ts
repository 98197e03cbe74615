// Redis bytes of the throttle: per lane once its queue is empty (the lane's state after its job
// started), and per queued job (lane entry + BullMQ job), next to BullMQ's bare queue.add with the
// same payload. INFO used_memory deltas / N and MEMORY USAGE of sampled keys, on a private redis-server.
//   npx tsx bench/throttle-memory.ts [--n 20000]
// BullMQ's event stream (capped at ~10,000 entries per queue) grows with the first jobs whatever the
// count; the `excludingEvents` figures take its growth out, the `all` figures keep it in.
// Prints one JSON document on stdout; progress goes to stderr.
import { parseArgs } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { createSluice, type Throttle } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({ options: { n: { type: 'string', default: '20000' } } });
const N = Number(flags.n);
if (!(N >= 1000 && N <= 500_000)) throw new Error('--n: 1000 .. 500000');
const log = (msg: string) => process.stderr.write(`[throttle-memory ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
setTimeout(() => {
  log('watchdog: still running after 10 min, exiting');
  process.exit(124);
}, 600_000).unref();

const server = await startRedis();
const raw = new Redis(server.port, '127.0.0.1');
const sluice = createSluice({ redis: server.url, prefix: 'bm' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PAYLOAD = (i: number) => ({ i });

const usedMemory = async () => {
  await sleep(300);
  return Number(/used_memory:(\d+)/.exec(await raw.info('memory'))?.[1]);
};

async function keysMatching(pattern: string, limit = 2_000_000): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await raw.scan(cursor, 'MATCH', pattern, 'COUNT', 5000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0' && found.length < limit);
  return found;
}

const usage = async (key: string) => Number((await raw.memory('USAGE', key, 'SAMPLES', '0')) ?? 0);

/** MEMORY USAGE of a BullMQ queue's event stream (the one per-queue structure that grows with the first ~10,000 jobs). */
const eventsOf = (prefix: string, queue: string) => usage(`${prefix}:${queue}:events`);

async function submitAll(n: number, op: (i: number) => Promise<unknown>, inflight = 64): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (next < n) await op(next++);
    }),
  );
}

async function admitted(t: Throttle, key: string, i: number): Promise<void> {
  const r = await t.submit(key, PAYLOAD(i));
  if (!r.admitted) throw new Error(`refused: ${r.reason}`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
async function sampleUsage(keys: string[], count = 200): Promise<{ median: number; max: number } | null> {
  if (keys.length === 0) return null;
  const sizes: number[] = [];
  for (let s = 0; s < count; s++) sizes.push(await usage(keys[Math.floor(Math.random() * keys.length)]!));
  return { median: median(sizes), max: Math.max(...sizes) };
}

const results: Record<string, unknown> = {};
try {
  // 1. Empty lanes: N keys, one job each, run by a worker here; the lane keeps its meter (next slot,
  //    starts handed out) until its last slot is past. A slow rate (1 per 1000 s) keeps every lane
  //    alive during the measurement; the bytes do not depend on the rate.
  {
    const name = 'idle';
    // pacingMargin 0.5 widens the gate's lateness tolerance to 500 ms: with submits and the worker in one
    // busy process, a start more than 10 ms late would hand its slot back and wait a whole lane interval
    // (1000 s here; see docs/benchmarks.md), and this bench is about bytes, not timing.
    const t = sluice.throttle(name, { ratePerSecond: 0.001, capacity: 1, pacingMargin: 0.5, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000 });
    let done = 0;
    const w = sluice.worker(name, () => void done++, { concurrency: 100, holdCapacity: 100 });
    await w.waitUntilReady();
    for (let i = 0; i < 20; i++) await admitted(t, `warm${i}`, i);
    while (done < 20) await sleep(20);
    const before = await usedMemory();
    const events0 = await eventsOf(t.keys.bullPrefix, name);
    const t0 = Date.now();
    await submitAll(N, (i) => admitted(t, `u${i}`, i));
    while (done < N + 20 && Date.now() - t0 < 120_000) await sleep(50);
    if (done < N + 20) log(`empty lanes: only ${done - 20} of ${N} jobs ran within 120 s`);
    await w.close();
    const after = await usedMemory();
    const eventsDelta = (await eventsOf(t.keys.bullPrefix, name)) - events0;
    const laneKeys = await keysMatching(`${t.keys.tag}:l:*`);
    const hashes = laneKeys.filter((k) => /:l:[^:]+$/.test(k));
    const example = hashes.find((k) => k.endsWith(':l:u0')) ?? hashes[0]!;
    results.emptyLane = {
      lanes: N,
      jobsRun: done - 20,
      bytesPerLane: { all: Math.round((after - before) / N), excludingEvents: Math.round((after - before - eventsDelta) / N) },
      laneKeysPerLane: Math.round((laneKeys.length / (N + 20)) * 100) / 100,
      laneHashMemoryUsage: await sampleUsage(hashes),
      exampleKey: example,
      exampleKeyLength: example.length,
      exampleFields: await raw.hgetall(example),
      exampleEncoding: await raw.object('ENCODING', example),
      exampleTtlMs: await raw.pttl(example),
      busySetMembers: await raw.zcard(t.keys.busy),
      bullJobHashesLeft: (await keysMatching(`${t.keys.bullPrefix}:${name}:j*`)).length,
    };
    log(`empty lanes: ${JSON.stringify(results.emptyLane)}`);
  }

  // 2. Queued jobs, all in ONE lane (no worker): each job is a lane member + a BullMQ delayed job.
  {
    const name = 'deep';
    const t = sluice.throttle(name, { ratePerSecond: 1, capacity: 10_000_000, submitTimeoutMs: 30_000 });
    await admitted(t, 'warm', -1);
    const before = await usedMemory();
    const events0 = await eventsOf(t.keys.bullPrefix, name);
    await submitAll(N, (i) => admitted(t, 'deep', i));
    const after = await usedMemory();
    const eventsDelta = (await eventsOf(t.keys.bullPrefix, name)) - events0;
    const jobKeys = await keysMatching(`${t.keys.bullPrefix}:${name}:j*`);
    results.queuedOneLane = {
      jobs: N,
      bytesPerJob: { all: Math.round((after - before) / N), excludingEvents: Math.round((after - before - eventsDelta) / N) },
      laneQueuePerJob: Math.round((await usage(t.keys.laneQueue('deep'))) / (N + 1)),
      bullJobHash: await sampleUsage(jobKeys),
      bullDelayedPerJob: Math.round((await usage(`${t.keys.bullPrefix}:${name}:delayed`)) / (N + 1)),
      lane: await t.lane('deep'),
    };
    log(`one lane: ${JSON.stringify(results.queuedOneLane)}`);
  }

  // 3. Queued jobs, one per lane (no worker): each job is a lane (hash + queue) + a busy-set member + a
  //    BullMQ job, due now (BullMQ's wait list).
  {
    const name = 'wide';
    const t = sluice.throttle(name, { ratePerSecond: 1, capacity: 10, submitTimeoutMs: 30_000 });
    await admitted(t, 'warm', -1);
    const before = await usedMemory();
    const events0 = await eventsOf(t.keys.bullPrefix, name);
    await submitAll(N, (i) => admitted(t, `u${i}`, i));
    const after = await usedMemory();
    const eventsDelta = (await eventsOf(t.keys.bullPrefix, name)) - events0;
    const laneKeys = await keysMatching(`${t.keys.tag}:l:*`);
    results.queuedOneJobPerLane = {
      jobs: N,
      bytesPerJob: { all: Math.round((after - before) / N), excludingEvents: Math.round((after - before - eventsDelta) / N) },
      laneKeysPerLane: Math.round((laneKeys.length / (N + 1)) * 100) / 100,
      laneHash: await sampleUsage(laneKeys.filter((k) => /:l:[^:]+$/.test(k))),
      laneQueue: await sampleUsage(laneKeys.filter((k) => k.endsWith(':q'))),
      busySetPerLane: Math.round((await usage(t.keys.busy)) / (N + 1)),
      bullJobHash: await sampleUsage(await keysMatching(`${t.keys.bullPrefix}:${name}:j*`, 5000)),
      bullWaitPerJob: Math.round((await usage(`${t.keys.bullPrefix}:${name}:wait`)) / (N + 1)),
    };
    log(`one per lane: ${JSON.stringify(results.queuedOneJobPerLane)}`);
  }

  // 4. The anchor: BullMQ's bare queue.add with the same payload, due now and delayed.
  const connection = new Redis(server.port, '127.0.0.1', { maxRetriesPerRequest: null });
  for (const [label, opts] of [
    ['bullmqAdd', {}],
    ['bullmqAddDelayed', { delay: 3_600_000 }],
  ] as const) {
    const q = new Queue(label, { connection, prefix: 'bull' });
    await q.add('j', PAYLOAD(-1), opts);
    const before = await usedMemory();
    const events0 = await eventsOf('bull', label);
    await submitAll(N, (i) => q.add('j', PAYLOAD(i), opts));
    const after = await usedMemory();
    const eventsDelta = (await eventsOf('bull', label)) - events0;
    results[label] = {
      jobs: N,
      bytesPerJob: { all: Math.round((after - before) / N), excludingEvents: Math.round((after - before - eventsDelta) / N) },
      jobHash: await sampleUsage(await keysMatching(`bull:${label}:[0-9]*`, 5000)),
    };
    log(`${label}: ${JSON.stringify(results[label])}`);
    await q.close();
  }
  connection.disconnect();
} finally {
  await sluice.close();
  raw.disconnect();
  await server.dispose();
}
process.stdout.write(JSON.stringify({ bench: 'throttle-memory', n: N, payload: '{"i": <n>}', results }, null, 2) + '\n');
