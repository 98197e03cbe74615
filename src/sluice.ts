// createSluice: the façade a user holds. It wires one Redis client, the script registry, the key
// builder and the clock, and hands out limiters, throttles and workers that share them. It knows
// nothing of HTTP: the express middleware is built from an instance by `sluice/express`.
import type { Cluster, Redis, RedisOptions } from 'ioredis';
import { SluiceError } from './errors.js';
import { systemClock, type Clock, type ClockSource } from './redis/clock.js';
import { createRedisClient, untilReady, type RedisClient, type RedisTarget } from './redis/connection.js';
import { KeyBuilder, assertName } from './redis/keys.js';
import { ScriptRegistry } from './redis/scripts.js';
import { Limiter, type DecisionObserver, type LimiterOptions } from './limiters/limiter.js';
import type { Policy, PolicyInput } from './limiters/policy.js';
import { admissionClientFor, bullClientFor } from './throttle/bull.js';
import type { ThrottleConfig, ThrottleConfigInput } from './throttle/config.js';
import type { ThrottleContext } from './throttle/context.js';
import { sameConfig } from './validation.js';
import type { LaneOverrides } from './throttle/lane-limits.js';
import type { ThrottleObserver } from './throttle/observer.js';
import { Throttle } from './throttle/throttle.js';
import { ThrottleWorker, type JobHandler, type ThrottleWorkerOptions } from './throttle/worker.js';
import { awaitPublishedConfig, type WaitLogger } from './throttle/await-config.js';
import { ThrottleKeys } from './throttle/keys.js';

/** Told about decisions, submits, starts and Redis errors: the metrics module plugs in here. */
export type SluiceObserver = DecisionObserver & ThrottleObserver;

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
  observer?: SluiceObserver;
  /** Extra ioredis options for connections sluice creates itself. */
  redisOptions?: RedisOptions;
}

export interface WorkerOptions<P = unknown> extends ThrottleWorkerOptions {
  /** The throttle's configuration, when this process did not call sluice.throttle(name, ...) (default: read the published one). */
  config?: ThrottleConfigInput;
  /**
   * Told when the worker waits for its throttle's configuration (no process published it yet) and when
   * it found it. Default: a Node process warning (code SLUICE_WAITING_FOR_THROTTLE) on stderr.
   */
  onWaiting?: WaitLogger;
  /** Only for typing the payload. */
  payload?: P;
}

export interface Sluice {
  /** A decision limiter for `policy` (validated by zod; throws SLUICE_ERR_INVALID_POLICY naming the field). */
  limiter(policy: PolicyInput | Policy, options?: LimiterOptions): Limiter;
  /** The queue-backed leaky-bucket throttle `name`: per-key bounded lanes drained at a fixed rate. */
  throttle(name: string, config: ThrottleConfigInput | ThrottleConfig): Throttle;
  /** Runs `handler` for the jobs of throttle `name`, each started at its lane's slot. */
  worker<P = unknown, R = unknown>(name: string, handler: JobHandler<P, R>, options?: WorkerOptions<P>): ThrottleWorker;
  /**
   * Resolves once the Redis client is connected (on a cluster: once it knows the slots), so that the
   * first decisions are not spent waiting for it inside their deadline. Await it before taking traffic
   * (`sluice serve` and `sluice worker` do). Rejects with SLUICE_ERR_REDIS_UNAVAILABLE after `timeoutMs`
   * (default 30,000). Decisions asked for before the client was first ready are counted
   * (`onDecisionBeforeReady`, metric `sluice_decisions_before_ready_total`).
   */
  ready(timeoutMs?: number): Promise<void>;
  /**
   * Follow operators' per-lane overrides from `source` (the admin control cache): admissions and
   * the outflow gate of every throttle of this instance use them from then on.
   * @internal
   */
  useOverrides(source: LaneOverrides | undefined): void;
  /** The Redis client decisions and admissions run on. */
  readonly redis: RedisClient;
  readonly keys: KeyBuilder;
  /** Closes workers (after their jobs finish), queues and what this instance opened (a client you passed in stays open). */
  close(): Promise<void>;
}

export function createSluice(options: SluiceOptions): Sluice {
  const keys = new KeyBuilder(options.prefix ?? 'sluice', options.hashSecret);
  const { client, owned } = createRedisClient(options.redis, options.redisOptions);
  const observer = options.observer;
  // ioredis re-emits every failed (re)connect as 'error'; for a client we own, they are counted, not thrown.
  if (owned) client.on('error', (error: Error) => observer?.onRedisError?.(error));
  const scripts = new ScriptRegistry(client);
  let closed = false;
  /** close() has begun: workers still waiting for a configuration give up. */
  let closing = false;
  let wasReady = client.status === 'ready';
  if (!wasReady) client.once('ready', () => (wasReady = true));
  let bull: { client: Redis | Cluster; scripts: ScriptRegistry } | undefined;
  const throttles = new Map<string, Throttle>();
  const workers: ThrottleWorker[] = [];
  let overrides: LaneOverrides | undefined;

  const limiterContext = {
    client,
    scripts,
    keys,
    clockSource: options.clock ?? 'redis',
    clock: options.clockImpl ?? systemClock,
    observer,
    isClosed: () => closed,
    wasReady: () => wasReady,
  };
  let admission: ReturnType<ThrottleContext['admission']> | undefined;
  const throttleContext: ThrottleContext = {
    client,
    scripts,
    keys,
    observer,
    overrides: () => overrides,
    isClosed: () => closed,
    admission() {
      if (!admission) {
        const admissionClient = admissionClientFor(client);
        admissionClient.on('error', (error: Error) => observer?.onRedisError?.(error));
        admission = { client: admissionClient, scripts: new ScriptRegistry(admissionClient) };
      }
      return admission;
    },
    bull() {
      if (!bull) {
        const bullClient = bullClientFor(client);
        bullClient.on('error', (error: Error) => observer?.onRedisError?.(error));
        bull = { client: bullClient, scripts: new ScriptRegistry(bullClient) };
      }
      return bull;
    },
  };

  return {
    redis: client,
    keys,
    ready: (timeoutMs = 30_000) => (closed ? Promise.reject(new SluiceError('SLUICE_ERR_CLOSED', 'this sluice instance is closed')) : untilReady(client, timeoutMs)),
    useOverrides(source) {
      overrides = source;
    },
    limiter: (policy, limiterOptions) => new Limiter(limiterContext, policy, limiterOptions),
    throttle(name, config) {
      assertName(name, 'throttle name');
      const existing = throttles.get(name);
      const t = new Throttle(throttleContext, name, config);
      if (existing && sameConfig(existing.config, t.config)) return existing;
      // A new configuration (e.g. the rules file changed) replaces the old one for new admissions.
      if (existing) void existing.close().catch(() => undefined);
      throttles.set(name, t);
      return t;
    },
    worker(name, handler, workerOptions = {}) {
      assertName(name, 'throttle name');
      const { config, payload: _p, onWaiting: waitLogger, ...rest } = workerOptions;
      let w: ThrottleWorker | undefined;
      const stopped = () => closing || w?.isClosing === true;
      const throttle = throttles.has(name)
        ? Promise.resolve(throttles.get(name)!)
        : config
          ? Promise.resolve(new Throttle(throttleContext, name, config))
          : awaitPublishedConfig(throttleContext, new ThrottleKeys(keys, name).config, name, stopped, waitLogger).then(
              (c) => new Throttle(throttleContext, name, c as ThrottleConfigInput),
            );
      w = new ThrottleWorker(throttleContext, throttle, handler as JobHandler, rest);
      workers.push(w);
      return w;
    },
    async close() {
      if (closed) return;
      closing = true;
      await Promise.all(workers.map((w) => w.close()));
      closed = true;
      await Promise.all([...throttles.values()].map((t) => t.close()));
      if (bull) await bull.client.quit().catch(() => bull!.client.disconnect());
      if (admission) await admission.client.quit().catch(() => admission!.client.disconnect());
      if (owned) await client.quit().catch(() => client.disconnect());
    },
  };
}
