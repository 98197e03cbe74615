// Leaky bucket as a meter (GCRA): the policy schema and how a call becomes a lua/gcra.lua call.
import { z } from 'zod';
import type { AlgorithmSpec } from './algorithm.js';
import { nonNegativeInt, policyBaseShape } from './policy-base.js';
import { refillIntervalUs } from './token-bucket.js';

/** `burst` when a leaky bucket does not say: perfectly spaced calls (the rules file and `simulate` too). */
export const DEFAULT_BURST = 0;

/** Another name of `leaky-bucket` (what the docs call it); a parsed policy always says `leaky-bucket`. */
export const LEAKY_BUCKET_ALIAS = 'gcra';

/**
 * Calls conform to a steady `ratePerSecond`, with up to `burst` extra calls allowed back to back
 * (burst 0 = perfectly spaced, the default). One timestamp per key. `limit` is reported as burst + 1.
 */
export const leakyBucketPolicy = z
  .object({
    algorithm: z.enum(['leaky-bucket', LEAKY_BUCKET_ALIAS]).transform(() => 'leaky-bucket' as const),
    ratePerSecond: z.number().positive().max(1e6),
    burst: nonNegativeInt.default(DEFAULT_BURST),
    ...policyBaseShape,
  })
  .strict()
  .refine((p) => (p.burst + 1) * refillIntervalUs(p.ratePerSecond) <= 2 ** 52, {
    path: ['burst'],
    message: '(burst + 1) / ratePerSecond must stay below 2^52 µs so the schedule is exact',
  });
export type LeakyBucketPolicy = z.infer<typeof leakyBucketPolicy>;

export const gcra: AlgorithmSpec<LeakyBucketPolicy, 'gcra'> = {
  script: 'gcra',
  suffix: 'g',
  unit: 'us',
  limit: (p) => p.burst + 1,
  policyArgs: (p) => ({ intervalUs: refillIntervalUs(p.ratePerSecond), burst: p.burst }),
};
