// Node CPU of the bounded per-key caches under churn (more callers than the cache holds): a limiter's key
// cache (src/limiters/key-cache.ts) and the request memo (src/cache/recent-map.ts), against the same
// rule with the plain eviction (a fresh `map.keys().next()` per eviction, as both did before stop 27),
// and a limiter's whole per-call preparation (Limiter.prepare: key, cache, deny cache, arguments; no
// Redis call is made). Keys are drawn at random from `--keys` distinct ones (1: one hot key), `--hot`
// of the draws from 100 hot keys instead.
//   npx tsx bench/key-cache.ts [--keys 100000] [--cache 10000] [--n 400000] [--reps 3] [--hot 0,0.5]
// Prints one JSON document on stdout: ns per call, the median of the reps, per case.
import { parseArgs } from 'node:util';
import { createSluice } from '../src/index.js';
import { KeyCache } from '../src/limiters/key-cache.js';
import { RecentMap } from '../src/cache/recent-map.js';
import { PlainNearlyLru } from '../test/helpers/plain-eviction.js';

const { values: flags } = parseArgs({
  options: {
    keys: { type: 'string', default: '100000' },
    cache: { type: 'string', default: '10000' },
    n: { type: 'string', default: '400000' },
    reps: { type: 'string', default: '3' },
    hot: { type: 'string', default: '0,0.5' },
  },
});
const keyCount = Number(flags.keys);
const cacheSize = Number(flags.cache);
const n = Number(flags.n);
const reps = Number(flags.reps);
const hotShares = flags.hot.split(',').map(Number);

function draws(hotShare: number): string[] {
  return Array.from({ length: n }, () => (Math.random() < hotShare ? `h${(Math.random() * 100) | 0}` : `u${(Math.random() * keyCount) | 0}`));
}

function nsPerCall(keys: string[], call: (key: string) => unknown): number {
  const t0 = performance.now();
  for (let i = 0; i < keys.length; i++) call(keys[i]!);
  return Math.round(((performance.now() - t0) * 1e6) / keys.length);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const compute = (k: string) => `redis:${k}`;
// A limiter that never reaches Redis here: prepare() only lays out the call.
const sluice = createSluice({ redis: 'redis://127.0.0.1:1', redisOptions: { lazyConnect: true } });
const limiter = sluice.limiter({ name: 'bench', algorithm: 'token-bucket', capacity: 1e9, refillPerSecond: 1e6 }, { keyCacheSize: cacheSize });
const prepare = (limiter as unknown as { prepare(key: string, options: object, record: boolean): unknown }).prepare.bind(limiter);

const rows: { case: string; hotShare: number; nsPerCall: number; nsPerCallPerRep: number[] }[] = [];
for (const hotShare of hotShares) {
  const keys = draws(hotShare);
  const cases: Record<string, () => (key: string) => unknown> = {
    'KeyCache (cursor)': () => {
      const cache = new KeyCache(cacheSize);
      return (k) => cache.get(k) ?? cache.add(k, compute(k));
    },
    'RecentMap (cursor)': () => {
      const map = new RecentMap<string>(cacheSize);
      return (k) => map.of(k, compute);
    },
    'plain eviction (keys().next())': () => {
      const map = new PlainNearlyLru<string>(cacheSize);
      return (k) => map.of(k, compute);
    },
    'Limiter.prepare': () => (k) => prepare(k, {}, true),
  };
  const per: Record<string, number[]> = {};
  for (let rep = 0; rep < reps; rep++) {
    for (const [name, make] of Object.entries(cases)) (per[name] ??= []).push(nsPerCall(keys, make()));
  }
  for (const [name, xs] of Object.entries(per)) rows.push({ case: name, hotShare, nsPerCall: median(xs), nsPerCallPerRep: xs });
}
await sluice.close();
process.stdout.write(`${JSON.stringify({ bench: 'key-cache', at: new Date().toISOString(), node: process.version, keys: keyCount, cacheSize, callsPerRep: n, reps, rows }, null, 2)}\n`);
