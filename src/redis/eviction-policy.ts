// The Redis memory policy, read at start: sluice's state (limiter counters, lane units, BullMQ jobs)
// must never be evicted, so any maxmemory-policy other than `noeviction` is worth a warning.
import { Cluster } from 'ioredis';
import type { RedisClient } from './connection.js';

/** What one node says about its memory limit. */
export interface MemoryPolicy {
  node: string;
  policy: string;
  maxmemoryBytes: number;
}

/**
 * The maxmemory policy of every master (one node, or each master of a cluster), from INFO memory,
 * or from CONFIG GET where INFO is unavailable. Nodes that answer neither (both commands disabled,
 * renamed or denied by ACL) are left out: the check is advisory and never stops a start.
 */
export async function readMemoryPolicies(client: RedisClient): Promise<{ policies: MemoryPolicy[]; unreadable: string[] }> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const policies: MemoryPolicy[] = [];
  const unreadable: string[] = [];
  await Promise.all(
    nodes.map(async (node) => {
      const name = `${node.options.host ?? '?'}:${node.options.port ?? '?'}`;
      const found = (await fromInfo(node).catch(() => undefined)) ?? (await fromConfig(node).catch(() => undefined));
      if (found) policies.push({ node: name, ...found });
      else unreadable.push(name);
    }),
  );
  return { policies, unreadable };
}

async function fromInfo(node: { info(section: string): Promise<string> }): Promise<Omit<MemoryPolicy, 'node'> | undefined> {
  const text = await node.info('memory');
  const policy = /^maxmemory_policy:(\S+)/m.exec(text)?.[1];
  const max = /^maxmemory:(\d+)/m.exec(text)?.[1];
  return policy === undefined ? undefined : { policy, maxmemoryBytes: Number(max ?? 0) };
}

async function fromConfig(node: { config(op: 'GET', name: string): Promise<unknown> }): Promise<Omit<MemoryPolicy, 'node'> | undefined> {
  const policy = (await node.config('GET', 'maxmemory-policy')) as string[];
  const max = (await node.config('GET', 'maxmemory')) as string[];
  return policy[1] === undefined ? undefined : { policy: policy[1], maxmemoryBytes: Number(max[1] ?? 0) };
}

/** True when Redis may drop sluice's keys under memory pressure. */
export function evicts(p: MemoryPolicy): boolean {
  return p.policy !== 'noeviction';
}
