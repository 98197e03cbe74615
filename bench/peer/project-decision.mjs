// peer-bench adapter (kind 'decision') for sluice's token bucket (or fixed window: SLUICE_PEER_ALGORITHM). Install it into a copy of peer-bench
// as adapters/project.mjs (see bench/peer/README.md). It imports sluice's BUILT output: run
// `npm run build` (or `npx tsc -p tsconfig.build.json`) in the sluice checkout first.
// SLUICE_DIST overrides where that output is (default /work/main/dist/src/index.js).
import { once } from 'node:events';
import { readFileSync } from 'node:fs';

const dist = process.env.SLUICE_DIST ?? '/work/main/dist/src/index.js';
const { createSluice } = await import(dist);

export const kind = 'decision';
export const name = 'sluice';
export const version = JSON.parse(readFileSync(new URL('../../package.json', new URL(dist, 'file:///')), 'utf8')).version;
// SLUICE_PEER_ALGORITHM=fixed-window runs sluice's fixed window (the algorithm rlf implements) instead
// of the token bucket: the memory scenario needs keys that outlive its write (a sluice token bucket's
// key expires 1 s after the bucket is full again: 1.6 s after one call of 100 per 60 s).
const algorithm = process.env.SLUICE_PEER_ALGORITHM ?? 'token-bucket';
if (!['token-bucket', 'fixed-window'].includes(algorithm)) throw new Error('SLUICE_PEER_ALGORITHM: token-bucket or fixed-window');
export const semantics =
  algorithm === 'token-bucket'
    ? 'token bucket (one int-encoded integer, the µs at which the bucket is full again, with PX TTL = time to full + 1 s; ' +
      'one EVALSHA: TIME + GET + SET PX in Lua; key `<prefix>:2{p:<identity>}t`, identities with ":" kept verbatim)'
    : 'fixed window (one int-encoded integer packing window index and count, PX TTL = window end + 1 s; key `<prefix>:2{p:<identity>}f`)';

/** sluice's schema caps the refill at 1e6 tokens/s; beyond that the bucket never empties in a bench anyway. */
const MAX_REFILL_PER_SECOND = 1e6;

/** @param {{redis: {host: string, port: number}, points: number, durationMs: number, prefix?: string, autoPipelining?: boolean}} o */
export async function create(o) {
  const prefix = o.prefix || 'sluice';
  const sluice = createSluice({
    redis: `redis://${o.redis.host || '127.0.0.1'}:${o.redis.port}`,
    prefix,
    redisOptions: { enableAutoPipelining: !!o.autoPipelining },
  });
  if (sluice.redis.status !== 'ready') await once(sluice.redis, 'ready');
  const shape =
    algorithm === 'token-bucket'
      ? { algorithm: 'token-bucket', capacity: o.points, refillPerSecond: Math.min(MAX_REFILL_PER_SECOND, (o.points * 1000) / o.durationMs) }
      : { algorithm: 'fixed-window', limit: o.points, windowMs: o.durationMs };
  const limiter = sluice.limiter({
    name: 'p',
    ...shape,
    // The product's default deadline (200 ms); a decision Redis could not make is reported as an error.
    failMode: 'closed',
  });
  return {
    keyPattern: `${prefix}:*`,
    async consume(key, cost = 1) {
      const d = await limiter.limit(key, { cost });
      if (d.failure) throw new Error(`sluice: Redis did not decide in time (${d.failure})`);
      return { allowed: d.allowed, remaining: d.remaining, retryAfterMs: d.retryAfterMs };
    },
    client: sluice.redis,
    async close() {
      await sluice.close();
    },
  };
}
