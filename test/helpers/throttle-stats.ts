// Outflow statistics of recorded job starts: the most starts in any sliding window, achieved rates,
// quantiles. Pure functions over wall-clock ms, shared by the throttle benches.

const r2 = (x: number) => Math.round(x * 100) / 100;

/** The most events inside any half-open window [t, t + windowMs), for times sorted ascending. */
export function maxInWindow(sorted: number[], windowMs: number): number {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

/** The q-quantile (nearest rank) of values sorted ascending; null when empty. */
export function quantile(sorted: number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** Starts per second between the first and the last start: (n - 1) / span. */
export function achievedRate(sorted: number[]): number | null {
  if (sorted.length < 2) return null;
  return (sorted.length - 1) / ((sorted.at(-1)! - sorted[0]!) / 1000);
}

/** min / p1 / p50 / p99 / max of a list (ms), rounded. */
export function spreadOf(values: number[]): { min: number | null; p1: number | null; p50: number | null; p99: number | null; max: number | null } {
  const s = [...values].sort((a, b) => a - b);
  const q = (x: number) => {
    const v = quantile(s, x);
    return v === null ? null : r2(v);
  };
  return { min: s.length ? r2(s[0]!) : null, p1: q(0.01), p50: q(0.5), p99: q(0.99), max: s.length ? r2(s.at(-1)!) : null };
}

/** Aggregate and per-lane outflow of starts `{t, lane}` against a per-lane rate and an optional total cap. */
export function outflowOf(starts: { t: number; lane: string }[], laneRate: number, totalCap: number | null) {
  const all = starts.map((s) => s.t).sort((a, b) => a - b);
  const byLane = new Map<string, number[]>();
  for (const s of starts) {
    let l = byLane.get(s.lane);
    if (!l) byLane.set(s.lane, (l = []));
    l.push(s.t);
  }
  let laneMax1s = 0;
  let laneMax100ms = 0;
  let lanesOver = 0;
  const laneRates: number[] = [];
  for (const times of byLane.values()) {
    times.sort((a, b) => a - b);
    const m1 = maxInWindow(times, 1000);
    laneMax1s = Math.max(laneMax1s, m1);
    laneMax100ms = Math.max(laneMax100ms, maxInWindow(times, 100));
    if (m1 > Math.max(1, Math.floor(laneRate + 1e-9))) lanesOver++;
    const a = achievedRate(times);
    if (a !== null) laneRates.push(a);
  }
  laneRates.sort((a, b) => a - b);
  const total = achievedRate(all);
  return {
    starts: all.length,
    lanes: byLane.size,
    spanMs: all.length ? Math.round(all.at(-1)! - all[0]!) : 0,
    total: {
      achievedPerSec: total === null ? null : r2(total),
      ...(totalCap !== null ? { capPerSec: totalCap, achievedOverCap: total === null ? null : r2(total / totalCap) } : {}),
      maxIn1s: maxInWindow(all, 1000),
      maxIn100ms: maxInWindow(all, 100),
    },
    perLane: {
      ratePerSec: laneRate,
      maxIn1s: laneMax1s,
      maxIn100ms: laneMax100ms,
      lanesOverRateIn1s: lanesOver,
      lanesWith2PlusStarts: laneRates.length,
      achievedOverRate:
        laneRates.length === 0
          ? null
          : { min: r2(laneRates[0]! / laneRate), p50: r2(quantile(laneRates, 0.5)! / laneRate), max: r2(laneRates.at(-1)! / laneRate) },
    },
  };
}
