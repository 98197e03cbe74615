// Sliding window log: the policy schema and how a call becomes a lua/sliding-log.lua call.
import { z } from 'zod';
import type { AlgorithmSpec } from './algorithm.js';
import { policyBaseShape, positiveInt } from './policy-base.js';

/**
 * At most `limit` units in any window of `windowMs` ending now: exact, one sorted-set member per unit.
 * `recordRejected` (strict "log-all"): refused calls are logged too, so a client that keeps hammering
 * stays refused; memory grows with refusals.
 */
export const slidingLogPolicy = z
  .object({
    algorithm: z.literal('sliding-log'),
    limit: positiveInt.max(100_000),
    windowMs: positiveInt,
    recordRejected: z.boolean().default(false),
    ...policyBaseShape,
  })
  .strict();
export type SlidingLogPolicy = z.infer<typeof slidingLogPolicy>;

export const slidingLog: AlgorithmSpec<SlidingLogPolicy, 'sliding-log'> = {
  script: 'sliding-log',
  suffix: 'l',
  unit: 'ms',
  limit: (p) => p.limit,
  policyArgs: (p) => ({ limit: p.limit, windowMs: p.windowMs, recordRejected: p.recordRejected ? 1 : 0 }),
};
