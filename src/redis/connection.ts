// Redis connections for the decision hot path: ioredis Redis or Cluster with defaults that keep a
// decision from hanging while Redis is down and from being silently sent twice after a reconnect.
import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import { SluiceError } from '../errors.js';
import { SENTINEL_SCHEME, sentinelOptions } from './sentinel-url.js';

/** A connected ioredis client: one node or a cluster. */
export type RedisClient = Redis | Cluster;

/**
 * What createSluice accepts as `redis`: a client you own, a `redis://` / `rediss://` URL, a
 * `redis-cluster://host:port,host:port` URL, a `redis-sentinel://host:port,host:port/mastername` URL
 * (see sentinel-url.ts), or cluster seed nodes.
 */
export type RedisTarget = RedisClient | string | { url: string } | { cluster: ClusterNode[] };

/**
 * Options for a client on the decision hot path.
 * - no offline queue: while disconnected a call fails at once (and the policy's fail mode decides)
 *   instead of waiting in memory and running minutes later;
 * - maxRetriesPerRequest 0 + no auto-resend: a script in flight when the socket drops is rejected,
 *   never re-run after reconnect, because re-running a decision would charge the caller twice;
 * - commandTimeout: a safety net behind each policy's own (shorter) deadline;
 * - retryStrategy: reconnect quickly and forever, so decisions resume with no manual step;
 * - no ioredis auto-pipelining on one node: the script registry already sends the decisions of one
 *   tick as one script call, and auto-pipelining on top only adds work (bench: 1.7–2.2x the peers'
 *   decisions/s without it, 1.1–1.5x with it). A cluster keeps it for the calls that go alone (a
 *   decision batch goes straight to its master's connection: src/redis/node-batch.ts).
 */
export const HOT_PATH_OPTIONS = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  commandTimeout: 2_000,
  connectTimeout: 2_000,
  enableAutoPipelining: false,
  retryStrategy: (attempt: number) => Math.min(50 * attempt, 500),
} satisfies RedisOptions;

/**
 * The cluster's own retries, for the hot path. ioredis re-sends a command after a closed connection
 * (`retryDelayOnFailover`: it may have run, so a re-send could charge twice) and after CLUSTERDOWN
 * (`retryDelayOnClusterDown`: 100 ms apart, up to 16 times, long after a 200 ms deadline): both off, the
 * call fails at once and the fail mode decides. Redirections (MOVED, ASK, TRYAGAIN) say the script did
 * not run: they are followed at once, and only while the caller still waits (redis/cluster-send.ts).
 */
export const CLUSTER_HOT_PATH_OPTIONS = {
  enableOfflineQueue: false,
  retryDelayOnFailover: 0,
  retryDelayOnClusterDown: 0,
  retryDelayOnTryAgain: 0,
  retryDelayOnMoved: 0,
  maxRedirections: 16,
} satisfies ClusterOptions;

/** Builds a hot-path client from a URL or cluster seeds; returns a caller's client unchanged. */
export function createRedisClient(target: RedisTarget, overrides: RedisOptions = {}): { client: RedisClient; owned: boolean } {
  if (target instanceof Redis || target instanceof Cluster) return { client: target, owned: false };
  if (typeof target === 'string' && target.startsWith('redis-cluster://')) {
    return createRedisClient({ cluster: clusterSeeds(target) }, overrides);
  }
  const text = typeof target === 'string' ? target : 'url' in target ? target.url : undefined;
  if (text?.startsWith(SENTINEL_SCHEME)) {
    return { client: new Redis({ ...HOT_PATH_OPTIONS, ...sentinelOptions(text), ...overrides }), owned: true };
  }
  if (typeof target === 'string' || 'url' in target) {
    const url = typeof target === 'string' ? target : target.url;
    if (!/^rediss?:\/\//.test(url)) {
      throw new SluiceError('SLUICE_ERR_INVALID_OPTIONS', `redis: expected a redis://, rediss://, redis-cluster:// or redis-sentinel:// URL, got '${url.replace(/\/\/[^@/]*@/, '//***@')}'`);
    }
    return { client: new Redis(url, { ...HOT_PATH_OPTIONS, ...overrides }), owned: true };
  }
  const clusterOptions: ClusterOptions = {
    ...CLUSTER_HOT_PATH_OPTIONS,
    // Calls that go alone (a decision whose master's batch held only it, the workers' calls) are grouped per node by ioredis.
    enableAutoPipelining: true,
    clusterRetryStrategy: HOT_PATH_OPTIONS.retryStrategy,
    redisOptions: { ...HOT_PATH_OPTIONS, ...overrides },
  };
  return { client: new Cluster(target.cluster, clusterOptions), owned: true };
}

/** `redis-cluster://host:port,host:port` -> the seed nodes of a cluster. */
export function clusterSeeds(url: string): ClusterNode[] {
  const hosts = url.slice('redis-cluster://'.length).replace(/\/.*$/, '').split(',').filter(Boolean);
  if (!hosts.length) throw new SluiceError('SLUICE_ERR_INVALID_OPTIONS', `redis: no seed nodes in '${url}'`);
  return hosts.map((h) => {
    const i = h.lastIndexOf(':');
    const port = Number(i > 0 ? h.slice(i + 1) : 6379);
    if (!Number.isInteger(port) || port <= 0) throw new SluiceError('SLUICE_ERR_INVALID_OPTIONS', `redis: bad seed '${h}' in '${url}'`);
    return { host: i > 0 ? h.slice(0, i) : h, port };
  });
}

/** Options BullMQ needs for its own connections (blocking commands must never time out or give up). */
export function bullConnectionOptions(client: RedisClient): RedisOptions {
  const base = client instanceof Cluster ? (client.options.redisOptions ?? {}) : client.options;
  return { ...base, maxRetriesPerRequest: null, enableOfflineQueue: true, commandTimeout: undefined, enableAutoPipelining: false };
}

/**
 * Resolves once the client is ready, or rejects with SLUICE_ERR_REDIS_UNAVAILABLE after `timeoutMs`.
 * Checked before every decision so that nothing ever sits in an offline queue. On a cluster, also once
 * no master's connection is still being made (see whenMastersConnected).
 */
export function whenReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return client instanceof Cluster ? whenMastersConnected(client, timeoutMs) : Promise.resolve();
  // Known to be down (between reconnect attempts, or closed): fail now rather than at the deadline.
  if (client.status === 'end' || client.status === 'close' || client.status === 'reconnecting') {
    return Promise.reject(new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', `Redis is unavailable (status ${client.status})`));
  }
  return nextReady(client, timeoutMs);
}

/**
 * Starts a lazy client's connection, then resolves on its next 'ready'; rejects with
 * SLUICE_ERR_REDIS_UNAVAILABLE after `timeoutMs`.
 */
function nextReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'wait') client.connect().catch(() => undefined);
  const started = Date.now();
  const ready = new Promise<void>((resolve, reject) => {
    const stopWaiting = onNextReady(client, () => {
      clearTimeout(timer);
      resolve();
    });
    const timer = setTimeout(() => {
      stopWaiting();
      reject(new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', `Redis not ready within ${timeoutMs} ms (status ${client.status})`));
    }, timeoutMs);
  });
  if (!(client instanceof Cluster)) return ready;
  return ready.then(() => whenMastersConnected(client, Math.max(1, timeoutMs - (Date.now() - started))));
}

/** A node connection's states while it is being made: not started yet (lazy), or under way. */
const BEING_MADE = new Set(['wait', 'connecting', 'connect']);

/**
 * Resolves once none of the cluster's master connections is still being made. ioredis makes a node's
 * connection on first use, and while it is under way a cluster client with no offline queue refuses
 * every further command routed to that node with "Connection is closed." (nothing was sent). Without
 * this wait, the first commands of a fresh client race its own connections: e.g. BullMQ's INFO to a
 * random master starts one, and an admission's SET to the same master a moment later is refused, so
 * every submit waiting on that first call fails. A connection known to be down is not waited for: a
 * command to it fails at once, as for any node that is down, and the fail mode decides.
 */
function whenMastersConnected(cluster: Cluster, timeoutMs: number): Promise<void> {
  let pending: Promise<void>[] | undefined;
  for (const node of cluster.nodes('master')) {
    if (BEING_MADE.has(node.status)) (pending ??= []).push(connectionSettled(node));
  }
  if (!pending) return Promise.resolve();
  const waiting = pending;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', `Redis Cluster: a master's connection not up within ${timeoutMs} ms`));
    }, timeoutMs);
    void Promise.all(waiting).then(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Each node connection being made, behind ONE set of listeners (not one per call in flight). */
const settling = new WeakMap<Redis, Promise<void>>();

/** Resolves when `node`'s connection is no longer being made: it is ready, or it closed. Starts it if lazy. */
function connectionSettled(node: Redis): Promise<void> {
  let settled = settling.get(node);
  if (!settled) {
    settled = new Promise<void>((resolve) => {
      const done = () => {
        node.off('ready', done).off('close', done).off('end', done);
        settling.delete(node);
        resolve();
      };
      node.on('ready', done).on('close', done).on('end', done);
    });
    settling.set(node, settled);
    if (node.status === 'wait') node.connect().catch(() => undefined);
  }
  return settled;
}

/** The callers waiting for a client's next 'ready', behind ONE listener (not one per call in flight). */
const readyWaiters = new WeakMap<RedisClient, Set<() => void>>();

/** Calls `fn` on the client's next 'ready'; returns a function that stops waiting. */
function onNextReady(client: RedisClient, fn: () => void): () => void {
  let waiters = readyWaiters.get(client);
  if (!waiters) {
    const set = new Set<() => void>();
    waiters = set;
    readyWaiters.set(client, set);
    client.once('ready', () => {
      readyWaiters.delete(client);
      for (const waiter of set) waiter();
    });
  }
  const set = waiters;
  set.add(fn);
  return () => set.delete(fn);
}

/**
 * Resolves once the client is ready (on a cluster: once it knows the slots), waiting through reconnect
 * attempts; rejects with SLUICE_ERR_REDIS_UNAVAILABLE after `timeoutMs` or when the client was closed.
 * What `sluice.ready()` waits for before a process takes traffic.
 */
export async function untilReady(client: RedisClient, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await untilOneReady(client, timeoutMs);
  // A cluster's node connections are made on first use: make them now, not inside a decision's deadline.
  if (client instanceof Cluster) await Promise.all(client.nodes('master').map((node) => untilOneReady(node, Math.max(1, deadline - Date.now()))));
}

function untilOneReady(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  if (client.status === 'end') return Promise.reject(new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', 'the Redis client is closed'));
  return nextReady(client, timeoutMs);
}
