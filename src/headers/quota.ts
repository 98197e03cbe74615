// What a decision truthfully says about a client's quota, per algorithm: the numbers every
// rate-limit header set is built from. Anything the decision cannot know exactly is left out.
import type { Decision } from '../limiters/decision.js';
import type { Policy } from '../limiters/policy.js';
import { refillIntervalUs } from '../limiters/token-bucket.js';

/** One decision to describe in headers. */
export interface HeaderInput {
  /** What the limiter answered. */
  decision: Decision;
  /** The policy that decided (validated). */
  policy: Policy;
  /** The policy identifier clients see (the rule name); printable ASCII. */
  name: string;
  /** Units this call asked for (default 1); needed to know whether a refusal's retry time is the time to one more unit. */
  cost?: number;
  /**
   * Optional partition key for the IETF fields, e.g. a hash of the identity. It is sent as bytes,
   * so never pass a raw API key.
   */
  partitionKey?: string;
}

/** The quota facts of one decision, in whole seconds where headers need them. */
export interface QuotaView {
  /** The policy's quota (`q`, `X-RateLimit-Limit`): units per window, bucket size, burst + 1, or slots. */
  quota: number;
  /** What is counted: calls per time, or calls in flight (concurrency). */
  unit: 'requests' | 'concurrent-requests';
  /**
   * The policy's window in whole seconds (`w`): the window of a window algorithm, the time a
   * token bucket takes to refill from empty (capacity / refill rate), or the time a GCRA meter takes
   * to drain its burst. Undefined when it is not a whole number of seconds or there is none
   * (concurrency): the drafts have no sub-second windows, and a rounded one would be false.
   */
  windowSeconds?: number;
  /** Units that could be spent now (`r`, `X-RateLimit-Remaining`). */
  remaining: number;
  /**
   * Seconds, rounded up, until at least one more unit becomes available: the end of a fixed window,
   * the next token, the next GCRA slot, or (for a refused sliding-log or sliding-counter call of
   * cost 1) the exact retry time. Undefined when the decision cannot tell (an allowed sliding-log or
   * sliding-counter call, a concurrency slot, a full bucket that gains nothing by waiting).
   */
  nextSeconds?: number;
  /** Epoch ms at which the key is back to full capacity if nothing else arrives (the decision's `resetAtMs`). */
  resetAtMs: number;
}

/** Whole seconds of `ms` when exact (to a millisecond's float noise), else undefined. */
function exactSeconds(ms: number): number | undefined {
  const s = ms / 1000;
  const r = Math.round(s);
  return r >= 1 && Math.abs(s - r) < 1e-9 ? r : undefined;
}

/** Rounds a time span up to whole seconds, so a client that waits it never comes back early. */
function ceilSeconds(ms: number): number {
  return Math.max(0, Math.ceil(ms / 1000 - 1e-9));
}

/** One view (a plain function, not a closure per call: this runs for every decision of every request). */
function viewOf(d: Decision, unit: QuotaView['unit'], windowSeconds: number | undefined, nextSeconds: number | undefined): QuotaView {
  return { quota: d.limit, unit, windowSeconds, remaining: d.remaining, nextSeconds, resetAtMs: d.resetAtMs };
}

/**
 * The quota facts of one decision at `nowMs` (the decision's clock, epoch ms).
 * @returns undefined for a decision Redis did not make (`decision.failure` set): it has no quota facts.
 */
export function quotaView(input: HeaderInput, nowMs: number): QuotaView | undefined {
  const { decision: d, policy: p } = input;
  if (d.failure) return undefined;
  const cost = input.cost ?? 1;
  // A refused call of cost 1 waits exactly for one more unit; for larger costs it is an upper bound only.
  const refusedOne = !d.allowed && cost === 1 ? ceilSeconds(d.retryAfterMs) : undefined;
  const untilReset = Math.max(0, d.resetAtMs - nowMs);
  switch (p.algorithm) {
    case 'fixed-window': {
      // The window ends at the reset when the window holds calls; otherwise it is computed from now.
      const end = d.resetAtMs > nowMs ? d.resetAtMs : (Math.floor(nowMs / p.windowMs) + 1) * p.windowMs;
      return viewOf(d, 'requests', exactSeconds(p.windowMs), ceilSeconds(end - nowMs));
    }
    case 'sliding-log':
    case 'sliding-counter':
      return viewOf(d, 'requests', exactSeconds(p.windowMs), refusedOne);
    case 'token-bucket': {
      const intervalMs = refillIntervalUs(p.refillPerSecond) / 1000;
      // resetAtMs - now = time to refill every missing token; all but the first of them are whole intervals.
      const next = d.remaining >= p.capacity ? undefined : untilReset - (p.capacity - d.remaining - 1) * intervalMs;
      return viewOf(d, 'requests', exactSeconds((p.capacity / p.refillPerSecond) * 1000), next === undefined ? undefined : ceilSeconds(next));
    }
    case 'leaky-bucket': {
      const intervalMs = refillIntervalUs(p.ratePerSecond) / 1000;
      // GCRA: remaining r means TAT - now lies in (tau - (r + 1)T, tau - rT]; one more unit once it drops to tau - rT.
      const next = d.remaining > p.burst ? undefined : untilReset - (p.burst - d.remaining) * intervalMs;
      return viewOf(d, 'requests', exactSeconds(((p.burst + 1) / p.ratePerSecond) * 1000), next === undefined ? undefined : ceilSeconds(next));
    }
    case 'concurrency':
      // A slot frees when its holder releases it, which no decision can foresee: lease expiries
      // (and so a refusal's retry time) are only upper bounds, so no time is claimed.
      return viewOf(d, 'concurrent-requests', undefined, undefined);
  }
}

/**
 * Orders inputs most restrictive first: refused before allowed, then lowest remaining, then
 * longest retry; the input order breaks ties. Decisions Redis did not make are left out.
 */
export function byRestriction(inputs: readonly HeaderInput[]): HeaderInput[] {
  return inputs
    .map((input, index) => ({ input, index }))
    .filter(({ input }) => !input.decision.failure)
    .sort(
      (a, b) =>
        Number(a.input.decision.allowed) - Number(b.input.decision.allowed) ||
        a.input.decision.remaining - b.input.decision.remaining ||
        b.input.decision.retryAfterMs - a.input.decision.retryAfterMs ||
        a.index - b.index,
    )
    .map(({ input }) => input);
}
