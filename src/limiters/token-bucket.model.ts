// Reference model of the token bucket (see lua/token-bucket.lua), in the classic form:
// tokens refill continuously up to the capacity; a call takes `cost` tokens if there are enough.
import { toUnit, type LimiterModel } from './algorithm.js';
import type { Decision } from './decision.js';
import { refillIntervalUs } from './token-bucket.js';

export class TokenBucketModel implements LimiterModel {
  /** Tokens x interval (µs of refill), an exact integer; undefined = never used (full). */
  private level: number | undefined;
  private lastUs = 0;

  constructor(private readonly p: { capacity: number; refillPerSecond: number }) {}

  decide(nowMs: number, cost: number, record = true): Decision {
    const now = toUnit(nowMs, 'us');
    const interval = refillIntervalUs(this.p.refillPerSecond);
    const limit = this.p.capacity;
    const full = limit * interval;
    let level = this.level === undefined ? full : Math.min(full, this.level + Math.max(0, now - this.lastUs));
    const need = cost * interval;
    if (level < need) {
      return {
        allowed: false,
        limit,
        remaining: Math.floor(level / interval),
        retryAfterMs: Math.ceil((need - level) / 1000),
        resetAtMs: Math.ceil((now + full - level) / 1000),
      };
    }
    if (record) {
      level -= need;
      this.level = level;
      this.lastUs = now;
    }
    return { allowed: true, limit, remaining: Math.floor(level / interval), retryAfterMs: 0, resetAtMs: Math.ceil((now + full - level) / 1000) };
  }
}
