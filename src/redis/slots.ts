// Whether keys can go to Redis in one script call: on a cluster only when they hash to one slot.
import calculateSlot from 'cluster-key-slot';
import { Cluster } from 'ioredis';
import type { RedisClient } from './connection.js';

/** True when one script may touch all of `keys` on `client`: always on one node, on a cluster when they share a slot. */
export function oneSlot(client: RedisClient, keys: readonly string[]): boolean {
  if (!(client instanceof Cluster) || keys.length < 2) return true;
  const slot = calculateSlot(keys[0]!);
  for (let i = 1; i < keys.length; i++) if (calculateSlot(keys[i]!) !== slot) return false;
  return true;
}
