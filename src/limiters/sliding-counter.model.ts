// Reference model of the sliding window counter (see lua/sliding-counter.lua), in plain TypeScript.
import { toUnit, type LimiterModel } from './algorithm.js';
import type { Decision } from './decision.js';

export class SlidingCounterModel implements LimiterModel {
  private index = Number.NaN;
  private current = 0;
  private previous = 0;

  constructor(private readonly p: { limit: number; windowMs: number; rounding?: 'floor' | 'ceil' }) {}

  decide(nowMs: number, cost: number, record = true): Decision {
    const now = toUnit(nowMs, 'ms');
    const { limit, windowMs: window } = this.p;
    const ceil = this.p.rounding === 'ceil';
    const weighted = (prev: number, elapsed: number) => {
      const w = prev * (window - elapsed);
      return ceil ? Math.floor((w + window - 1) / window) : Math.floor(w / window);
    };
    const firstPosition = (prev: number, m: number) => {
      if (prev === 0) return 0;
      const bound = ceil ? m * window : (m + 1) * window - 1;
      return Math.max(0, window - Math.floor(bound / prev));
    };

    const index = Math.floor(now / window);
    const start = index * window;
    let current = 0;
    let previous = 0;
    if (index === this.index) [current, previous] = [this.current, this.previous];
    else if (index === this.index + 1) previous = this.current;

    let estimate = current + weighted(previous, now - start);
    const allowed = estimate + cost <= limit;
    if (allowed && record) {
      current += cost;
      estimate += cost;
      [this.index, this.current, this.previous] = [index, current, previous];
    }
    let resetAtMs = now;
    if (current > 0) resetAtMs = start + 2 * window;
    else if (previous > 0) resetAtMs = start + window;
    const remaining = Math.max(0, limit - estimate);
    if (allowed) return { allowed, limit, remaining, retryAfterMs: 0, resetAtMs };

    let at: number | undefined;
    const m = limit - cost - current;
    if (m >= 0) {
      const p = firstPosition(previous, m);
      if (p < window) at = start + p;
    }
    at ??= start + window + Math.min(firstPosition(current, limit - cost), window);
    return { allowed, limit, remaining, retryAfterMs: at - now, resetAtMs };
  }
}
