// Token bucket: the policy schema and how a call becomes a lua/token-bucket.lua call.
import { z } from 'zod';
import type { AlgorithmSpec } from './algorithm.js';
import { policyBaseShape, positiveInt } from './policy-base.js';

/** µs to refill one token. Rounded to a whole µs so the scripts use exact integers (error < 1 µs per token). */
export function refillIntervalUs(refillPerSecond: number): number {
  return Math.max(1, Math.round(1e6 / refillPerSecond));
}

/**
 * A bucket of `capacity` tokens refilled continuously at `refillPerSecond`; a call of cost c takes c
 * tokens. Allows bursts up to the capacity, then the refill rate.
 */
export const tokenBucketPolicy = z
  .object({
    algorithm: z.literal('token-bucket'),
    capacity: positiveInt,
    refillPerSecond: z.number().positive().max(1e6),
    ...policyBaseShape,
  })
  .strict()
  .refine((p) => p.capacity * refillIntervalUs(p.refillPerSecond) <= 2 ** 52, {
    path: ['capacity'],
    message: 'capacity / refillPerSecond must stay below 2^52 µs (about 142 years) so the bucket level is exact',
  });
export type TokenBucketPolicy = z.infer<typeof tokenBucketPolicy>;

export const tokenBucket: AlgorithmSpec<TokenBucketPolicy, 'token-bucket'> = {
  script: 'token-bucket',
  suffix: 't',
  unit: 'us',
  limit: (p) => p.capacity,
  policyArgs: (p) => ({ capacity: p.capacity, intervalUs: refillIntervalUs(p.refillPerSecond) }),
};
