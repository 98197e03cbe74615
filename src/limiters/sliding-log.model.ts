// Reference model of the sliding window log (see lua/sliding-log.lua), in plain TypeScript.
import { toUnit, type LimiterModel } from './algorithm.js';
import type { Decision } from './decision.js';

export class SlidingLogModel implements LimiterModel {
  /** Entry times in ms, ascending. */
  private entries: number[] = [];

  constructor(private readonly p: { limit: number; windowMs: number; recordRejected?: boolean }) {}

  /** Entries currently in the log (for tests that check the log size). */
  get size(): number {
    return this.entries.length;
  }

  decide(nowMs: number, cost: number, record = true): Decision {
    const now = toUnit(nowMs, 'ms');
    const { limit, windowMs } = this.p;
    const cutoff = now - windowMs;
    if (record) this.entries = this.entries.filter((t) => t > cutoff);
    const live = this.entries.filter((t) => t > cutoff);
    let count = live.length;
    const allowed = count + cost <= limit;
    const adds = record && (allowed || this.p.recordRejected === true);
    if (adds) {
      for (let i = 0; i < cost; i++) live.push(now);
      live.sort((a, b) => a - b);
      this.entries = live;
      count += cost;
    }
    let resetAtMs = now;
    if (adds) resetAtMs = now + windowMs;
    else if (live.length > 0) resetAtMs = live[live.length - 1]! + windowMs;
    if (allowed) return { allowed, limit, remaining: Math.max(0, limit - count), retryAfterMs: 0, resetAtMs };
    const freeing = live[count + cost - limit - 1]!;
    return { allowed, limit, remaining: Math.max(0, limit - count), retryAfterMs: freeing + windowMs - now, resetAtMs };
  }
}
