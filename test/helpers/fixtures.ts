// Test fixtures: a sluice instance on a private redis-server (single node or a 3-master cluster),
// with a unique key prefix, so tests clean only what they made.
import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createSluice, type RedisTarget, type Sluice, type SluiceOptions } from '../../src/index.js';
import { startCluster, startRedis, type RedisServer } from './redis-server.js';

/** A prefix nobody else uses. */
export function uniquePrefix(tag = 't'): string {
  return `${tag}${randomBytes(4).toString('hex')}`;
}

export type Topology = 'single' | 'cluster';
export const TOPOLOGIES: Topology[] = ['single', 'cluster'];

export interface Backend {
  topology: Topology;
  /** What createSluice takes (also passed to child processes as JSON). */
  target: string | { cluster: { host: string; port: number }[] };
  /** The server, when single: tests that stop and restart Redis use it. */
  server?: RedisServer;
  /** A plain client for inspecting state. */
  raw: Redis | Cluster;
  sluice(options?: Partial<SluiceOptions>): Sluice;
  dispose(): Promise<void>;
}

/** Starts a private Redis of the given topology; every sluice made from it is closed on dispose. */
export async function startBackend(topology: Topology = 'single'): Promise<Backend> {
  const made: Sluice[] = [];
  let target: Backend['target'];
  let raw: Redis | Cluster;
  let stop: () => Promise<void>;
  let server: RedisServer | undefined;
  if (topology === 'single') {
    server = await startRedis();
    target = server.url;
    raw = new Redis(server.port, '127.0.0.1');
    stop = () => server!.dispose();
  } else {
    const cluster = await startCluster();
    target = { cluster: cluster.nodes };
    raw = new Cluster(cluster.nodes);
    stop = () => cluster.dispose();
  }
  return {
    topology,
    target,
    ...(server ? { server } : {}),
    raw,
    sluice(options = {}) {
      const s = createSluice({ redis: target as RedisTarget, prefix: uniquePrefix(), ...options });
      made.push(s);
      return s;
    },
    async dispose() {
      await Promise.all(made.map((s) => s.close()));
      raw.disconnect();
      await stop();
    },
  };
}

/** A private Redis (and one sluice on it) for the tests of the enclosing file or describe block. */
export interface BackendContext {
  readonly backend: Backend;
  readonly sluice: Sluice;
}

/** Starts a backend before the tests of the current scope and disposes of it after them. */
export function useBackend(topology: Topology = 'single'): BackendContext {
  let backend: Backend | undefined;
  let sluice: Sluice | undefined;
  beforeAll(async () => {
    backend = await startBackend(topology);
    sluice = backend.sluice();
  });
  afterAll(async () => {
    await backend?.dispose();
  });
  return {
    get backend() {
      return backend!;
    },
    get sluice() {
      return sluice!;
    },
  };
}
