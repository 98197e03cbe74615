// How a sharded throttle's global cap is divided among its shards (docs/algorithms.md, "A throttle
// across a cluster"). Pure: the allocator (share-allocator.ts) feeds it each shard's demand, the sum of
// its busy lanes' own rates.

/**
 * Whole starts per second for each shard, summing to at most floor(cap), each at least 1.
 *
 * Every lane gets the same fraction λ = min(1, cap / Σ demand) of its own rate, so a shard's share is
 * λ × its demand: the division the unsharded dispatcher makes among lanes (max-min fair, weighted by
 * the lanes' rates, no lane above its rate), made among shards. What demand leaves over is spread
 * evenly, so a lane that becomes busy between two divisions starts at once. Whole numbers: a shard
 * meter spaced (1 + margin) / r apart starts at most r jobs in any 1 s when r is whole, so the shards
 * together never start more than the cap in any second while the shares hold.
 */
export function divideCap(cap: number, demands: readonly number[]): number[] {
  const n = demands.length;
  const total = Math.floor(cap);
  if (n === 0) return [];
  if (total < n) throw new RangeError(`a cap of ${cap} cannot give ${n} shards 1 start per second each`);
  const sum = demands.reduce((a, d) => a + Math.max(0, d), 0);
  const lambda = sum > 0 ? Math.min(1, total / sum) : 0;
  const target = demands.map((d) => Math.max(0, d) * lambda);
  const shares = target.map((t) => Math.max(1, Math.floor(t)));
  // The floors of 1 may overshoot: taken from the largest shares.
  let over = shares.reduce((a, s) => a + s, 0) - total;
  while (over > 0) {
    let big = 0;
    for (let i = 1; i < n; i++) if (shares[i]! > shares[big]!) big = i;
    shares[big]!--;
    over--;
  }
  let left = total - shares.reduce((a, s) => a + s, 0);
  // First to the shards below their target, largest shortfall first.
  const short = shares.map((s, i) => ({ i, gap: target[i]! - s })).filter((x) => x.gap > 0).sort((a, b) => b.gap - a.gap || a.i - b.i);
  for (const { i, gap } of short) {
    const give = Math.min(left, Math.ceil(gap));
    shares[i]! += give;
    left -= give;
    if (left === 0) break;
  }
  // Then evenly (room for demand that appears before the next division).
  const each = Math.floor(left / n);
  for (let i = 0; i < n; i++) shares[i]! += each + (i < left - each * n ? 1 : 0);
  return shares;
}
