// Reference model of the fixed window counter (see lua/fixed-window.lua), in plain TypeScript.
import { toUnit, type LimiterModel } from './algorithm.js';
import type { Decision } from './decision.js';

export class FixedWindowModel implements LimiterModel {
  private index = Number.NaN;
  private count = 0;

  constructor(private readonly p: { limit: number; windowMs: number }) {}

  decide(nowMs: number, cost: number, record = true): Decision {
    const now = toUnit(nowMs, 'ms');
    const { limit, windowMs } = this.p;
    const index = Math.floor(now / windowMs);
    const resetAt = (index + 1) * windowMs;
    const count = index === this.index ? this.count : 0;
    if (count + cost > limit) {
      return { allowed: false, limit, remaining: Math.max(0, limit - count), retryAfterMs: resetAt - now, resetAtMs: resetAt };
    }
    const after = record ? count + cost : count;
    if (record) {
      this.index = index;
      this.count = after;
    }
    return { allowed: true, limit, remaining: Math.max(0, limit - after), retryAfterMs: 0, resetAtMs: after > 0 ? resetAt : now };
  }
}
