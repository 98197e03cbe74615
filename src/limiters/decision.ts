// The one result type every decision limiter returns, and the options of a decision call.

/**
 * The answer to "may this go now?". Being refused is a result, never an exception.
 * Times are in the clock the decision used: Redis TIME by default, or the caller's `nowMs`.
 */
export interface Decision {
  /** True when the call may proceed (and, unless peeked, was charged). */
  allowed: boolean;
  /** The policy's size: units per window, bucket capacity, burst + 1 (GCRA) or slots in flight. */
  limit: number;
  /** Units that could still be spent right now, after this call (0 when refused and empty). */
  remaining: number;
  /** 0 when allowed; otherwise the exact ms until a call of the same cost would be allowed, rounded up. */
  retryAfterMs: number;
  /** Epoch ms at which the key is back to full capacity if nothing else arrives. */
  resetAtMs: number;
  /** Concurrency limiter only: the lease an allowed call holds; pass it to `release`. */
  leaseId?: string;
  /** Set only when Redis could not decide and the policy's fail mode did: 'fail-open' or 'fail-closed'. */
  failure?: 'fail-open' | 'fail-closed';
}

/** Options of one decision call. */
export interface DecisionOptions {
  /** Units this call costs (integer >= 1, default 1, at most the policy's limit). */
  cost?: number;
  /** Decide at this instant (epoch ms, may be fractional) instead of Redis TIME: tests and simulations. */
  nowMs?: number;
}

/** Raw script reply: [allowed 0|1, remaining, retryAfter, resetAt] with times in the script's unit. */
export type DecisionReply = [number, number, number, number];

/**
 * Converts a script reply (at `at` in `reply`: a decision script's reply at 0, one limit of
 * lua/limits.lua's flat reply further on) to a Decision; µs scripts are rounded *up* to ms so nobody
 * retries early.
 */
export function decisionFromReply(reply: readonly number[], at: number, limit: number, unit: 'ms' | 'us'): Decision {
  const allowed = reply[at]!;
  const remaining = reply[at + 1]!;
  const retryAfter = reply[at + 2]!;
  const resetAt = reply[at + 3]!;
  if (unit === 'ms') return { allowed: allowed === 1, limit, remaining, retryAfterMs: retryAfter, resetAtMs: resetAt };
  return { allowed: allowed === 1, limit, remaining, retryAfterMs: Math.ceil(retryAfter / 1000), resetAtMs: Math.ceil(resetAt / 1000) };
}
