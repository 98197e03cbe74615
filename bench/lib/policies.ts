// The policies the benchmarks run: one per algorithm, sized so that every call is allowed, so a
// figure measures the pure cost of a decision and never the refused path.
import type { Algorithm, PolicyInput } from '../../src/index.js';

/** Every algorithm, in the order the reports list them. */
export const BENCH_ALGORITHMS: Algorithm[] = ['fixed-window', 'sliding-log', 'sliding-counter', 'token-bucket', 'leaky-bucket', 'concurrency'];

/**
 * Huge limits: nothing is ever refused. The sliding log keeps one member per call, so its window is
 * 1 s (the log holds about one second of calls, as a loaded production key would) rather than growing
 * without bound; the concurrency limiter is measured as acquire + release (see decisions.ts).
 * A long timeoutMs: the benchmark must measure Redis, not fail open on a loaded 2-core machine.
 */
export const BENCH_POLICIES: Record<Algorithm, PolicyInput> = {
  'fixed-window': { name: 'fw', algorithm: 'fixed-window', limit: 1e12, windowMs: 3_600_000, timeoutMs: 10_000 },
  'sliding-log': { name: 'sl', algorithm: 'sliding-log', limit: 100_000, windowMs: 1_000, timeoutMs: 10_000 },
  'sliding-counter': { name: 'sc', algorithm: 'sliding-counter', limit: 1e9, windowMs: 3_600_000, timeoutMs: 10_000 },
  'token-bucket': { name: 'tb', algorithm: 'token-bucket', capacity: 1e9, refillPerSecond: 1e6, timeoutMs: 10_000 },
  'leaky-bucket': { name: 'lb', algorithm: 'leaky-bucket', ratePerSecond: 1e6, burst: 1e9, timeoutMs: 10_000 },
  concurrency: { name: 'cc', algorithm: 'concurrency', limit: 100_000, leaseMs: 60_000, timeoutMs: 10_000 },
};

/** The identity of call `i` over `keys` distinct keys: short and safe, so it is stored verbatim (not hashed). */
export function identityOf(keys: number): () => string {
  if (keys === 1) return () => 'hot';
  return () => `u${(Math.random() * keys) | 0}`;
}
