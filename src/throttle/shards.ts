// Where the lanes and jobs of a sharded throttle live (`shards` > 1, docs/algorithms.md, "A throttle
// across a cluster"). Shard i is a whole throttle of its own hash tag `{t:<name>#<j>}`, j chosen so that
// the tag's cluster slot lies in the i-th of `count` equal ranges of the slot space: on a cluster whose
// masters own equal slot ranges (the default), the shards spread evenly over the masters. A lane lives in
// one shard (a stable hash of its lane id), so everything per lane (bound, FIFO, Retry-After) is as exact
// as on one shard; a job id carries its shard (`<id>.s<i>`), so a lookup by id goes to one shard.
import calculateSlot from 'cluster-key-slot';

const SLOTS = 16384;

/** The hash tag suffix of shard `index` of `count` (`''`: an unsharded throttle, today's layout). */
export function shardSuffix(name: string, index: number, count: number): string {
  if (count <= 1) return '';
  const from = Math.floor((index * SLOTS) / count);
  const to = Math.floor(((index + 1) * SLOTS) / count);
  // About `count` tries on average; the first match, so every process finds the same tag.
  for (let j = 0; ; j++) {
    const slot = calculateSlot(`t:${name}#${j}`);
    if (slot >= from && slot < to) return `#${j}`;
  }
}

/** The shard of a lane: FNV-1a (32 bit) of its lane id, modulo the shard count. Stable across processes and versions. */
export function shardOfLane(laneId: string, count: number): number {
  if (count <= 1) return 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < laneId.length; i++) {
    h ^= laneId.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % count;
}

const JOB_SHARD = /\.s(\d{1,2})$/;

/** A job id of shard `index` (unsharded: the id as it is). */
export function shardJobId(jobId: string, index: number, count: number): string {
  return count <= 1 ? jobId : `${jobId}.s${index}`;
}

/** The shard a job id names, or undefined when it names none (or one beyond `count`). */
export function shardOfJob(jobId: string, count: number): number | undefined {
  if (count <= 1) return 0;
  const m = JOB_SHARD.exec(jobId);
  if (!m) return undefined;
  const i = Number(m[1]);
  return i < count ? i : undefined;
}
