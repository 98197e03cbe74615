// peer-bench adapter (kind 'decision') for sluice's token bucket. Install it into a copy of peer-bench
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
export const semantics =
  'token bucket (string "<level in µs of refill>:<last refill µs>" with PX TTL = time to full + 1 s; ' +
  'one EVALSHA: TIME + GET + SET PX in Lua; identities with ":" are stored as a 22-char SHA-256)';

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
  const limiter = sluice.limiter({
    name: 'p',
    algorithm: 'token-bucket',
    capacity: o.points,
    refillPerSecond: Math.min(MAX_REFILL_PER_SECOND, (o.points * 1000) / o.durationMs),
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
