// Reference model of the concurrency limit (see lua/concurrency-acquire.lua), in plain TypeScript.
import { toUnit, type LimiterModel } from './algorithm.js';
import type { Decision } from './decision.js';

export class ConcurrencyModel implements LimiterModel {
  /** Expiry (ms) of every unit held, one entry per unit, with the lease it belongs to. */
  private units: { lease: string; expiresAt: number }[] = [];
  private next = 0;

  constructor(private readonly p: { limit: number; leaseMs: number }) {}

  decide(nowMs: number, cost: number, record = true): Decision {
    const now = toUnit(nowMs, 'ms');
    const { limit, leaseMs } = this.p;
    if (record) this.units = this.units.filter((u) => u.expiresAt > now);
    const live = this.units.filter((u) => u.expiresAt > now).sort((a, b) => a.expiresAt - b.expiresAt);
    let held = live.length;
    const allowed = held + cost <= limit;
    let leaseId: string | undefined;
    if (allowed && record) {
      leaseId = `m${this.next++}`;
      for (let i = 0; i < cost; i++) this.units.push({ lease: leaseId, expiresAt: now + leaseMs });
      held += cost;
    }
    const all = this.units.filter((u) => u.expiresAt > now).sort((a, b) => a.expiresAt - b.expiresAt);
    const resetAtMs = all.length ? all[all.length - 1]!.expiresAt : now;
    if (allowed) return { allowed, limit, remaining: Math.max(0, limit - held), retryAfterMs: 0, resetAtMs, ...(leaseId ? { leaseId } : {}) };
    const freeing = live[held + cost - limit - 1]!;
    return { allowed, limit, remaining: Math.max(0, limit - held), retryAfterMs: freeing.expiresAt - now, resetAtMs };
  }

  /** Gives a lease back; returns the units released. */
  release(leaseId: string): number {
    const before = this.units.length;
    this.units = this.units.filter((u) => u.lease !== leaseId);
    return before - this.units.length;
  }
}
