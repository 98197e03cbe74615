// Random policies of every decision algorithm, small enough that random sequences reach their limits:
// the property tests of the scripts against their models draw from these.
import fc from 'fast-check';
import type { PolicyInput } from '../../src/index.js';

/**
 * Policies of every decision algorithm whose limits go up to `max` (burst up to `max - 1`); the all-or-
 * nothing and model tests use 8, the deny-cache test 6 (it leaves out concurrency, which it never caches).
 */
export function policyArbitraries(max: number): Record<string, fc.Arbitrary<PolicyInput>> {
  return {
    'fixed-window': fc.record({ algorithm: fc.constant('fixed-window' as const), limit: fc.integer({ min: 1, max }), windowMs: fc.integer({ min: 1, max: 5_000 }) }),
    'sliding-log': fc.record({
      algorithm: fc.constant('sliding-log' as const),
      limit: fc.integer({ min: 1, max }),
      windowMs: fc.integer({ min: 1, max: 5_000 }),
      recordRejected: fc.boolean(),
    }),
    'sliding-counter': fc.record({
      algorithm: fc.constant('sliding-counter' as const),
      limit: fc.integer({ min: 1, max }),
      windowMs: fc.integer({ min: 1, max: 5_000 }),
      rounding: fc.constantFrom('floor' as const, 'ceil' as const),
    }),
    'token-bucket': fc.record({
      algorithm: fc.constant('token-bucket' as const),
      capacity: fc.integer({ min: 1, max }),
      refillPerSecond: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.01, max: 50, noNaN: true })),
    }),
    'leaky-bucket': fc.record({
      algorithm: fc.constant('leaky-bucket' as const),
      ratePerSecond: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.01, max: 50, noNaN: true })),
      burst: fc.integer({ min: 0, max: max - 1 }),
    }),
    concurrency: fc.record({ algorithm: fc.constant('concurrency' as const), limit: fc.integer({ min: 1, max }), leaseMs: fc.integer({ min: 1, max: 5_000 }) }),
  };
}

export const policies = policyArbitraries(8);
