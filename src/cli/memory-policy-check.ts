// At the start of serve/worker/dev: warn when Redis may evict sluice's keys (docs/operations.md#memory).
import type { Logger } from 'pino';
import { whenReady, type RedisClient } from '../redis/connection.js';
import { evicts, readMemoryPolicies } from '../redis/eviction-policy.js';

/** Logs one warning per evicting node, or (debug) that the policy could not be read. Never throws. */
export async function checkMemoryPolicy(client: RedisClient, logger: Logger, timeoutMs = 5_000): Promise<void> {
  try {
    // The hot-path client has no offline queue: wait until it is connected (a cluster: slots known).
    await whenReady(client, timeoutMs);
    const timeout = new Promise<undefined>((r) => setTimeout(() => r(undefined), timeoutMs).unref());
    const read = await Promise.race([readMemoryPolicies(client), timeout]);
    if (!read) {
      logger.debug({ event: 'redis_memory_policy_unread' }, 'Redis memory policy not read (no answer yet)');
      return;
    }
    for (const p of read.policies.filter(evicts)) {
      logger.warn(
        { event: 'redis_eviction_policy', node: p.node, policy: p.policy, maxmemoryBytes: p.maxmemoryBytes },
        `Redis maxmemory-policy is '${p.policy}': under memory pressure Redis may evict limiter counters (limits reset and let more through), lane units and BullMQ jobs (jobs lost); use noeviction (docs/operations.md#memory)`,
      );
    }
    if (read.unreadable.length) {
      logger.debug({ event: 'redis_memory_policy_unread', nodes: read.unreadable }, 'Redis memory policy not readable (INFO and CONFIG refused)');
    }
  } catch (error) {
    logger.debug({ event: 'redis_memory_policy_unread', err: error }, 'Redis memory policy not read');
  }
}
