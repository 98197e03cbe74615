// Two private single-node Redis servers, each with a plain client and a sluice of one prefix: for tests
// that hold a batched path to the same calls made one at a time, server against server.
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createSluice, type Sluice } from '../../src/index.js';
import { startRedis, type RedisServer } from './redis-server.js';

export interface TwinBackends {
  /** [batched side, one-at-a-time side], once beforeAll has run. */
  readonly sluices: Sluice[];
  readonly raws: Redis[];
}

/** Starts both in beforeAll and closes everything in afterAll. */
export function useTwinBackends(prefix: string): TwinBackends {
  const servers: RedisServer[] = [];
  const sluices: Sluice[] = [];
  const raws: Redis[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) {
      const s = await startRedis();
      servers.push(s);
      raws.push(new Redis(s.port, '127.0.0.1'));
      sluices.push(createSluice({ redis: s.url, prefix }));
    }
  });
  afterAll(async () => {
    for (const s of sluices) await s.close();
    for (const r of raws) r.disconnect();
    for (const s of servers) await s.dispose();
  });
  return { sluices, raws };
}
