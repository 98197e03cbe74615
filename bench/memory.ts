// Redis bytes per active key for each algorithm: 100k keys written through a Limiter on a private
// redis-server, then INFO used_memory delta / N and MEMORY USAGE of a sample of keys, with a breakdown
// (dict entries, key name, value, hash-table slots), next to rate-limiter-flexible's RateLimiterRedis
// written with the same identities in the same run.
// Identities: `u:<n>` (a user id with a `:`, kept verbatim) and 40-character API keys (sensitive: hashed).
//   npx tsx bench/memory.ts [--keys 100000] [--algorithms token-bucket,...] [--identities user,apikey]
// Prints one JSON document on stdout; progress goes to stderr.
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createSluice, type Algorithm, type PolicyInput } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { closedLoop } from './lib/load.js';
import { BENCH_ALGORITHMS } from './lib/policies.js';

const { values: flags } = parseArgs({
  options: {
    keys: { type: 'string', default: '100000' },
    algorithms: { type: 'string', default: BENCH_ALGORITHMS.join(',') },
    identities: { type: 'string', default: 'user,apikey' },
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
/** Identity styles: a user id with a `:` (stored verbatim), and a 40-character API key (sensitive, so hashed). */
const IDENTITIES = {
  user: { of: (i: number) => `u:${i}`, sensitive: false },
  apikey: { of: (i: number) => `sk_live_${createHash('sha256').update(String(i)).digest('hex').slice(0, 32)}`, sensitive: true },
} as const;
type IdentityStyle = keyof typeof IDENTITIES;
const styles = flags.identities.split(',') as IdentityStyle[];
for (const s of styles) if (!(s in IDENTITIES)) throw new Error(`--identities: ${Object.keys(IDENTITIES).join(', ')}`);

/** jemalloc's small size classes (bytes), as Redis 7.0 allocates: a request is rounded up to the next. */
const SIZE_CLASSES = [8, 16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256];
const rounded = (n: number) => SIZE_CLASSES.find((c) => c >= n) ?? n;
/**
 * Where one string key's bytes go on Redis 7.0 (64-bit): a dictEntry (24 B) in the main dict and one in
 * the expires dict; the key name as an sds (1-byte header for names under 32 characters, else 3, + NUL);
 * the value object: none for a shared integer (0..9999), a 16-byte robj holding an integer, or robj and
 * string in one allocation (embstr: 16 + 3 + length + 1). What the INFO delta holds beyond these is the
 * two dicts' bucket arrays (8 B per slot, a power of two ≥ the keys) and allocator slack.
 */
function breakdown(keyLength: number, encoding: string, refcount: number, valueLength: number, hasTtl: boolean, measured: number) {
  const dictEntries = rounded(24) * (hasTtl ? 2 : 1);
  const keyName = rounded(keyLength + (keyLength < 32 ? 2 : 4));
  const value = encoding === 'int' ? (refcount >= 2_147_483_647 ? 0 : 16) : encoding === 'embstr' ? rounded(16 + 3 + valueLength + 1) : NaN;
  return { dictEntries, keyName, value, slotsAndRest: Number.isNaN(value) ? NaN : measured - dictEntries - keyName - value };
}

const server = await startRedis();
const sluice = createSluice({ redis: server.url });
const redis = sluice.redis;
const usedMemory = async () => {
  await new Promise((r) => setTimeout(r, 200));
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
};
const results: Record<string, unknown>[] = [];
/** Writes N keys with `write(i)`, then measures: INFO delta, MEMORY USAGE of sampled keys, one key's shape. */
async function measure(label: Record<string, unknown>, write: (i: number) => Promise<unknown>, keyOf: (i: number) => string) {
  const before = await usedMemory();
  let next = 0;
  const load = await closedLoop(() => write(next++), 256, 120_000, N);
  if (load.errors) throw new Error(`${load.errors} errors while writing keys`);
  const after = await usedMemory();
  const sizes: number[] = [];
  for (let s = 0; s < 200; s++) sizes.push(Number(await redis.memory('USAGE', keyOf(Math.floor(Math.random() * N)), 'SAMPLES', '0')));
  sizes.sort((a, b) => a - b);
  const k0 = keyOf(0);
  const type = await redis.type(k0);
  const value = type === 'string' ? await redis.get(k0) : await redis.zrange(k0, '0', '-1', 'WITHSCORES');
  const encoding = String(await redis.object('ENCODING', k0));
  const refcount = Number(await redis.object('REFCOUNT', k0));
  const ttlMs = await redis.pttl(k0);
  const bytesPerKeyInfoDelta = Math.round((after - before) / N);
  const row = {
    ...label,
    keys: N,
    bytesPerKeyInfoDelta,
    memoryUsageMedian: sizes[sizes.length >> 1],
    memoryUsageMax: sizes[sizes.length - 1],
    exampleKey: k0,
    keyLength: k0.length,
    type,
    encoding,
    sharedValue: refcount >= 2_147_483_647,
    exampleValue: value,
    ttlMs,
    breakdown: type === 'string' ? breakdown(k0.length, encoding, refcount, String(value).length, ttlMs > 0, bytesPerKeyInfoDelta) : undefined,
  };
  results.push(row);
  log(`${JSON.stringify(label)}: ${bytesPerKeyInfoDelta} B/key (INFO), MEMORY USAGE ${row.memoryUsageMedian}, key ${k0} (${k0.length}), ${encoding} ${JSON.stringify(value)}`);
  // Empty the private server, tables included: a dict emptied key by key keeps its grown bucket array
  // until serverCron shrinks it, and the next case would then not pay for its own (~21 B per key).
  await redis.flushall('SYNC');
}

try {
  for (const style of styles) {
    const { of: identity, sensitive } = IDENTITIES[style];
    // rate-limiter-flexible's RateLimiterRedis (a fixed window: INCR + PEXPIRE on `<keyPrefix>:<key>`), the same identities.
    const rlf = new RateLimiterRedis({ storeClient: redis, keyPrefix: 'rl', points: 100, duration: 3600 });
    await measure({ algorithm: 'rlf-fixed-window', layout: 'rlf', identity: style }, (i) => rlf.consume(identity(i), 1), (i) => `rl:${identity(i)}`);
    for (const algorithm of algorithms) {
      for (const { layout, name } of LAYOUTS) {
        const limiter = sluice.limiter({ ...POLICIES[algorithm], ...(name ? { name } : {}) });
        await measure({ algorithm, layout, identity: style }, (i) => limiter.limit(identity(i), { sensitive }), (i) => limiter.keyOf(identity(i), { sensitive }));
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
          'identities: user = u:<n> (verbatim), apikey = sk_live_<32 hex> (40 characters, sensitive: hashed); rlf = rate-limiter-flexible RateLimiterRedis, keyPrefix rl, 100 per hour',
          'breakdown: dictEntries (main + expires, 24 B each, allocated 32), keyName (sds), value (0 = shared integer), slotsAndRest = INFO delta minus those (dict bucket slots, 8 B each, two tables; allocator slack)',
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
