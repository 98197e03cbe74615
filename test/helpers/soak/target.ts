// Where a soak runs: a private redis-server, or a private 3-master cluster whose throttle is split into
// shards (docs/algorithms.md, "A throttle across a cluster"). The checks read Redis through `RawRedis`
// and reach each key through the shard that holds it.
import { Cluster, Redis } from 'ioredis';
import { clusterSeeds } from '../../../src/redis/connection.js';
import { startCluster, startRedis } from '../redis-server.js';

export type RawRedis = Redis | Cluster;

export interface SoakTarget {
  /** A redis:// URL, or a redis-cluster:// URL naming every master. */
  url: string;
  dispose(): Promise<void>;
}

/** One redis-server (`masters` 1) or a cluster of `masters` masters, on free ports. */
export async function startTarget(masters: number): Promise<SoakTarget> {
  if (masters === 1) {
    const server = await startRedis();
    return { url: server.url, dispose: () => server.dispose() };
  }
  const cluster = await startCluster(masters);
  return { url: `redis-cluster://${cluster.nodes.map((n) => `${n.host}:${n.port}`).join(',')}`, dispose: () => cluster.dispose() };
}

/** A plain client of the target (not sluice's: the checks read what the scripts left). */
export function rawClient(url: string): RawRedis {
  return url.startsWith('redis-cluster://') ? new Cluster(clusterSeeds(url)) : new Redis(url);
}
