// What throttles and workers need from the sluice instance that made them.
import type { Cluster, Redis } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import type { KeyBuilder } from '../redis/keys.js';
import type { ScriptRegistry } from '../redis/scripts.js';
import type { LaneOverrides } from './lane-limits.js';
import type { ThrottleObserver } from './observer.js';

export interface ThrottleContext {
  /** The hot-path client (no offline queue): admissions, with a deadline. */
  client: RedisClient;
  scripts: ScriptRegistry;
  keys: KeyBuilder;
  /**
   * The admission client, made on first use: hot-path options (no offline queue, no re-send after a
   * reconnect: an admission re-sent into a Redis restarted empty would admit what its caller was told
   * failed). The admission script writes the submit's BullMQ job too; the throttle's queue reads go here.
   */
  admission(): { client: Redis | Cluster; scripts: ScriptRegistry };
  /** The resilient client BullMQ and the outflow gate use (waits out a Redis restart), made on first use. */
  bull(): { client: Redis | Cluster; scripts: ScriptRegistry };
  observer?: ThrottleObserver | undefined;
  /** Operators' per-lane overrides (the admin control cache), when this process follows them. */
  overrides?: () => LaneOverrides | undefined;
  isClosed(): boolean;
}
