// Lane keys that fall in a chosen shard of a sharded throttle (short keys are their own lane ids), for
// tests that need lanes in given shards.
import { shardOfLane } from '../../src/throttle/shards.js';

/** The first `n` keys `<prefix><i>` whose lanes live in `shard` of `shards`. */
export function lanesInShard(shard: number, n: number, prefix: string, shards: number): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if (shardOfLane(`${prefix}${i}`, shards) === shard) out.push(`${prefix}${i}`);
  return out;
}
