// Redis bytes per active key for each algorithm: 100k keys written through a Limiter on a private
// redis-server, then INFO used_memory delta / N and MEMORY USAGE of a sample of keys.
//   npx tsx bench/memory.ts [--keys 100000] [--algorithms token-bucket,...]
// Prints one JSON document on stdout; progress goes to stderr.
import { parseArgs } from 'node:util';
import { createSluice, type Algorithm, type PolicyInput } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop } from './lib/load.js';
import { BENCH_ALGORITHMS } from './lib/policies.js';

const { values: flags } = parseArgs({
  options: {
    keys: { type: 'string', default: '100000' },
    algorithms: { type: 'string', default: BENCH_ALGORITHMS.join(',') },
  },
});
const N = Number(flags.keys);
if (!(N >= 1000 && N <= 1_000_000)) throw new Error('--keys: 1000 .. 1000000');
const algorithms = flags.algorithms.split(',') as Algorithm[];
const log = (msg: string) => process.stderr.write(`[memory ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
setTimeout(() => {
  log('watchdog: still running after 10 min, exiting');
  process.exit(124);
}, 600_000).unref();

/**
 * Ordinary production-sized policies (100 calls an hour): the state looks as it would in real use, and
 * every key outlives the measurement (a token bucket's key expires once it is full again, 36 s after one call).
 */
const POLICIES: Record<Algorithm, PolicyInput> = {
  'fixed-window': { algorithm: 'fixed-window', limit: 100, windowMs: 3_600_000 },
  'sliding-log': { algorithm: 'sliding-log', limit: 100, windowMs: 3_600_000 },
  'sliding-counter': { algorithm: 'sliding-counter', limit: 100, windowMs: 3_600_000 },
  'token-bucket': { algorithm: 'token-bucket', capacity: 100, refillPerSecond: 100 / 3600 },
  'leaky-bucket': { algorithm: 'leaky-bucket', ratePerSecond: 100 / 3600, burst: 99 },
  concurrency: { algorithm: 'concurrency', limit: 10, leaseMs: 3_600_000 },
};
/** Key layouts: the defaults (prefix `sluice`, namespace from the policy's hash) and a named policy. */
const LAYOUTS = [
  { layout: 'default', name: undefined },
  { layout: 'named', name: 'api' },
] as const;
const identity = (i: number) => `u${String(i).padStart(8, '0')}`;

const server = await startRedis();
const sluice = createSluice({ redis: server.url });
const redis = sluice.redis;
const usedMemory = async () => {
  await new Promise((r) => setTimeout(r, 200));
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
};
const results: Record<string, unknown>[] = [];
try {
  for (const algorithm of algorithms) {
    for (const { layout, name } of LAYOUTS) {
      const limiter = sluice.limiter({ ...POLICIES[algorithm], ...(name ? { name } : {}) });
      const before = await usedMemory();
      let next = 0;
      const load = await closedLoop(() => limiter.limit(identity(next++)), 256, 120_000, N);
      if (load.errors) throw new Error(`${load.errors} errors while writing keys`);
      const after = await usedMemory();
      const sizes: number[] = [];
      for (let s = 0; s < 200; s++) {
        sizes.push(Number(await redis.memory('USAGE', limiter.keyOf(identity(Math.floor(Math.random() * N))), 'SAMPLES', '0')));
      }
      sizes.sort((a, b) => a - b);
      const k0 = limiter.keyOf(identity(0));
      const type = await redis.type(k0);
      const example = type === 'string' ? await redis.get(k0) : await redis.zrange(k0, '0', '-1', 'WITHSCORES');
      const row = {
        algorithm,
        layout,
        keys: N,
        bytesPerKeyInfoDelta: Math.round((after - before) / N),
        memoryUsageMedian: sizes[sizes.length >> 1],
        memoryUsageMax: sizes[sizes.length - 1],
        exampleKey: k0,
        keyLength: k0.length,
        type,
        encoding: await redis.object('ENCODING', k0),
        exampleValue: example,
        ttlMs: await redis.pttl(k0),
      };
      results.push(row);
      log(`${algorithm} ${layout}: ${row.bytesPerKeyInfoDelta} B/key (INFO), MEMORY USAGE ${row.memoryUsageMedian}, key ${k0.length} chars, ${row.encoding} ${JSON.stringify(example)}`);
      // Clean up by name (never SCAN by pattern): the keys are known.
      for (let i = 0; i < N; i += 1000) {
        await redis.unlink(...Array.from({ length: Math.min(1000, N - i) }, (_, j) => limiter.keyOf(identity(i + j))));
      }
    }
  }
  const info = await redis.info('server');
  process.stdout.write(
    JSON.stringify(
      {
        benchmark: 'memory',
        at: new Date().toISOString(),
        redisVersion: /redis_version:(\S+)/.exec(info)?.[1],
        notes: [
          'bytesPerKeyInfoDelta = (INFO used_memory after - before) / keys: includes both dict entries (keys + expires), bucket slots and allocator rounding',
          'memoryUsageMedian = MEMORY USAGE <key> SAMPLES 0 over 200 random keys: the key object alone',
          'policies: 100 calls an hour; one call per key (concurrency: one lease held per key)',
        ],
        results,
      },
      null,
      2,
    ) + '\n',
  );
} finally {
  await sluice.close();
  await server.dispose();
}
