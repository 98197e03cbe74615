// Reference model of GCRA (see lua/gcra.lua) as the virtual scheduling algorithm of ITU-T I.371:
// a call at t conforms when t >= TAT - tolerance; the TAT then moves on by one emission interval per unit.
import { toUnit, type LimiterModel } from './algorithm.js';
import type { Decision } from './decision.js';
import { refillIntervalUs } from './token-bucket.js';

export class GcraModel implements LimiterModel {
  private tatUs = Number.NEGATIVE_INFINITY;

  constructor(private readonly p: { ratePerSecond: number; burst: number }) {}

  decide(nowMs: number, cost: number, record = true): Decision {
    const t = toUnit(nowMs, 'us');
    const T = refillIntervalUs(this.p.ratePerSecond);
    const tolerance = this.p.burst * T;
    const limit = this.p.burst + 1;
    const tat = Math.max(this.tatUs, t);
    // A call of cost c is c back-to-back unit calls: the last of them must conform.
    const lastUnitTat = tat + (cost - 1) * T;
    const conforms = t >= lastUnitTat - tolerance;
    const after = conforms && record ? tat + cost * T : tat;
    if (conforms && record) this.tatUs = after;
    const remaining = Math.max(0, Math.floor((tolerance + T - (after - t)) / T));
    return {
      allowed: conforms,
      limit,
      remaining,
      retryAfterMs: conforms ? 0 : Math.ceil((lastUnitTat - tolerance - t) / 1000),
      resetAtMs: Math.ceil(after / 1000),
    };
  }
}
