// Test fixtures: a sluice instance on a private redis-server, with a unique key prefix per test file.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createSluice, type Sluice, type SluiceOptions } from '../../src/index.js';
import { startRedis, type RedisServer } from './redis-server.js';

/** A prefix nobody else uses: tests clean only what they made. */
export function uniquePrefix(tag = 't'): string {
  return `${tag}${randomBytes(4).toString('hex')}`;
}

export interface SingleNode {
  server: RedisServer;
  sluice: Sluice;
  /** A plain client for inspecting state. */
  raw: Redis;
  dispose(): Promise<void>;
}

export async function singleNode(options: Partial<SluiceOptions> = {}): Promise<SingleNode> {
  const server = await startRedis();
  const sluice = createSluice({ redis: server.url, prefix: uniquePrefix(), ...options });
  const raw = new Redis(server.port, '127.0.0.1');
  return {
    server,
    sluice,
    raw,
    async dispose() {
      await sluice.close();
      raw.disconnect();
      await server.dispose();
    },
  };
}
