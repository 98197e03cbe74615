// Sliding window counter: the policy schema and how a call becomes a lua/sliding-counter.lua call.
import { z } from 'zod';
import type { AlgorithmSpec } from './algorithm.js';
import { MAX_EXACT, policyBaseShape, positiveInt } from './policy-base.js';

/**
 * Estimates the count in the window ending now from two fixed windows:
 * current + previous x (share of the previous window still inside). `rounding` of that estimate:
 * 'floor' (default, as the classic description) or 'ceil' (never lets the estimate round in the caller's favour).
 */
export const slidingCounterPolicy = z
  .object({
    algorithm: z.literal('sliding-counter'),
    limit: positiveInt,
    windowMs: positiveInt,
    rounding: z.enum(['floor', 'ceil']).default('floor'),
    ...policyBaseShape,
  })
  .strict()
  .refine((p) => (p.limit + 1) * p.windowMs <= MAX_EXACT, {
    path: ['limit'],
    message: '(limit + 1) x windowMs must stay below 2^53 so the estimate is exact',
  });
export type SlidingCounterPolicy = z.infer<typeof slidingCounterPolicy>;

export const slidingCounter: AlgorithmSpec<SlidingCounterPolicy, 'sliding-counter'> = {
  script: 'sliding-counter',
  suffix: 'c',
  unit: 'ms',
  limit: (p) => p.limit,
  policyArgs: (p) => ({ limit: p.limit, windowMs: p.windowMs, rounding: p.rounding }),
};
