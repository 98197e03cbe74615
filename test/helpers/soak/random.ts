// Seeded randomness for the soak: a run is repeated exactly (the same keys, costs and behaviours in the
// same order) from its --seed; only the machine's timing differs.

/** A seeded generator of numbers in [0, 1) (mulberry32: small, fast, good enough for a workload). */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws key indexes 0..n-1 with weight 1 / (i + 1)^exponent (a binary search over the cumulative weights). */
export function zipfPicker(n: number, exponent: number, random: () => number): () => number {
  const cumulative: number[] = [];
  let sum = 0;
  for (let i = 0; i < n; i++) cumulative.push((sum += 1 / Math.pow(i + 1, exponent)));
  return () => {
    const u = random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
