// Random policies of every decision algorithm, small enough that random sequences reach their limits:
// the property tests of the scripts against their models draw from these.
import fc from 'fast-check';
import type { PolicyInput } from '../../src/index.js';

export const policies: Record<string, fc.Arbitrary<PolicyInput>> = {
  'fixed-window': fc.record({ algorithm: fc.constant('fixed-window' as const), limit: fc.integer({ min: 1, max: 8 }), windowMs: fc.integer({ min: 1, max: 5_000 }) }),
  'sliding-log': fc.record({
    algorithm: fc.constant('sliding-log' as const),
    limit: fc.integer({ min: 1, max: 8 }),
    windowMs: fc.integer({ min: 1, max: 5_000 }),
    recordRejected: fc.boolean(),
  }),
  'sliding-counter': fc.record({
    algorithm: fc.constant('sliding-counter' as const),
    limit: fc.integer({ min: 1, max: 8 }),
    windowMs: fc.integer({ min: 1, max: 5_000 }),
    rounding: fc.constantFrom('floor' as const, 'ceil' as const),
  }),
  'token-bucket': fc.record({
    algorithm: fc.constant('token-bucket' as const),
    capacity: fc.integer({ min: 1, max: 8 }),
    refillPerSecond: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.01, max: 50, noNaN: true })),
  }),
  'leaky-bucket': fc.record({
    algorithm: fc.constant('leaky-bucket' as const),
    ratePerSecond: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.01, max: 50, noNaN: true })),
    burst: fc.integer({ min: 0, max: 7 }),
  }),
  concurrency: fc.record({ algorithm: fc.constant('concurrency' as const), limit: fc.integer({ min: 1, max: 8 }), leaseMs: fc.integer({ min: 1, max: 5_000 }) }),
};
