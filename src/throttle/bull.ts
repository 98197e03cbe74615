// BullMQ's connections: a client beside the hot-path one, with the options BullMQ needs (blocking
// commands that wait out a Redis restart rather than fail), and the admission client (the hot path's
// options, for the admission script, which writes the submit's job too), made from the same target.
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import { coalesceWrites } from '../redis/write-coalescing.js';

/** Redirections a BullMQ / gate command follows before it fails: about a minute of TRYAGAIN (see bullClientFor). */
export const MIGRATION_REDIRECTIONS = 1_000;

/** A client for BullMQ queues and workers and for the outflow gate, made from the hot-path client's settings. */
export function bullClientFor(client: RedisClient): Redis | Cluster {
  const resilient = {
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    enableAutoPipelining: false,
    autoResendUnfulfilledCommands: true,
    commandTimeout: undefined,
  };
  const bull = bullClientOf(client, resilient);
  // Workers send several commands per job from the same tick (a completion, the next fetch, the gate's
  // call, job events): one writev for them all (redis/write-coalescing.ts).
  coalesceWrites(bull);
  return bull;
}

function bullClientOf(client: RedisClient, resilient: RedisOptions): Redis | Cluster {
  if (client instanceof Cluster) {
    // startupNodes is typed private but is the seed list the cluster was made with.
    const seeds = (client as unknown as { startupNodes: ConstructorParameters<typeof Cluster>[0] }).startupNodes;
    return new Cluster(seeds, {
      ...client.options,
      // ioredis's own defaults: BullMQ and the gate wait out a failover (the hot path turns these off).
      retryDelayOnFailover: 100,
      retryDelayOnClusterDown: 100,
      retryDelayOnTryAgain: 100,
      // While the throttle's slot is being migrated (resharding), every multi-key script of it (BullMQ's
      // moveToFinished, moveToDelayed, extendLock, the gate's) is refused with TRYAGAIN, for as long as
      // the move takes (seconds for a slot of a few hundred keys). ioredis counts each TRYAGAIN, and each
      // MOVED / ASK of the retry (sent to a random node), against maxRedirections, then rejects with
      // "Too many Cluster redirections": with the default 16 that came after about a second. BullMQ
      // takes that for a Redis answer, not a connection error: it does not retry a job's completion, and
      // the job stayed active, its lock no longer renewed, until the stalled check ran it a second time
      // (docs/operations.md#cluster). A TRYAGAIN is retried 100 ms later on a random master (a MOVED or
      // ASK on the way counts too): 1,000 wait out about a minute of migration (measured on a 3-master
      // cluster with a slot held split: 61 s), as long as the gate keeps asking (pass-gate.ts).
      maxRedirections: MIGRATION_REDIRECTIONS,
      enableOfflineQueue: true,
      enableAutoPipelining: false,
      redisOptions: { ...client.options.redisOptions, ...resilient },
    });
  }
  return new Redis({ ...client.options, ...resilient, lazyConnect: false });
}

/**
 * The admission client: the hot-path client's options (no offline queue, nothing re-sent after a
 * reconnect), on a connection of its own. An admission re-sent after a reconnect could land in a Redis
 * restarted empty after its caller was told it failed: a job nobody expects.
 */
export function admissionClientFor(client: RedisClient): Redis | Cluster {
  if (client instanceof Cluster) {
    const seeds = (client as unknown as { startupNodes: ConstructorParameters<typeof Cluster>[0] }).startupNodes;
    return new Cluster(seeds, client.options);
  }
  return new Redis({ ...client.options, lazyConnect: false });
}
