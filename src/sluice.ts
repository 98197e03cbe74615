// createSluice: the façade a user holds. It wires one Redis client, the script registry, the key
// builder and the clock, and hands out limiters (and, later, throttles and workers) that share them.
import type { RedisOptions } from 'ioredis';
import { systemClock, type Clock, type ClockSource } from './redis/clock.js';
import { createRedisClient, type RedisClient, type RedisTarget } from './redis/connection.js';
import { KeyBuilder } from './redis/keys.js';
import { ScriptRegistry } from './redis/scripts.js';
import { Limiter, type DecisionObserver } from './limiters/limiter.js';
import type { Policy, PolicyInput } from './limiters/policy.js';

export interface SluiceOptions {
  /** An ioredis Redis or Cluster you own (sluice never closes it), a redis:// URL, or `{ cluster: [...] }`. */
  redis: RedisTarget;
  /** First segment of every key (default `sluice`). */
  prefix?: string;
  /** 'redis' (default): scripts read Redis TIME. 'client': this process's clock, for managed Redis that refuses TIME. */
  clock?: ClockSource;
  /** The clock used when `clock` is 'client' (tests: a ManualClock). */
  clockImpl?: Clock;
  /** HMAC secret for identity hashes (recommended when identities are low-entropy, such as emails). */
  hashSecret?: string;
  /** Told about every decision: the metrics module plugs in here. */
  observer?: DecisionObserver;
  /** Extra ioredis options for connections sluice creates itself. */
  redisOptions?: RedisOptions;
}

export interface Sluice {
  /** A decision limiter for `policy` (validated by zod; throws SLUICE_ERR_INVALID_POLICY naming the field). */
  limiter(policy: PolicyInput | Policy): Limiter;
  /** The Redis client decisions run on. */
  readonly redis: RedisClient;
  readonly keys: KeyBuilder;
  /** Closes what this instance opened (a client you passed in stays open). */
  close(): Promise<void>;
}

export function createSluice(options: SluiceOptions): Sluice {
  const keys = new KeyBuilder(options.prefix ?? 'sluice', options.hashSecret);
  const { client, owned } = createRedisClient(options.redis, options.redisOptions);
  // ioredis re-emits every failed (re)connect as 'error'; for a client we own, they are counted, not thrown.
  if (owned) client.on('error', (error: Error) => options.observer?.onRedisError?.(error));
  const scripts = new ScriptRegistry(client);
  let closed = false;
  const context = {
    client,
    scripts,
    keys,
    clockSource: options.clock ?? 'redis',
    clock: options.clockImpl ?? systemClock,
    observer: options.observer,
    isClosed: () => closed,
  };
  return {
    redis: client,
    keys,
    limiter: (policy) => new Limiter(context, policy),
    async close() {
      if (closed) return;
      closed = true;
      if (owned) await client.quit().catch(() => client.disconnect());
    },
  };
}
