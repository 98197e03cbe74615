// The decision policy: a zod discriminated union on `algorithm`, the single source of truth for
// policies given in code, in the rules file and over HTTP.
import { z } from 'zod';
import { SluiceError } from '../errors.js';
import { describeIssues, issuesOf } from '../validation.js';
import type { AlgorithmSpec } from './algorithm.js';
import { concurrency, concurrencyPolicy } from './concurrency.js';
import { fixedWindow, fixedWindowPolicy } from './fixed-window.js';
import { LEAKY_BUCKET_ALIAS, gcra, leakyBucketPolicy } from './gcra.js';
import { slidingCounter, slidingCounterPolicy } from './sliding-counter.js';
import { slidingLog, slidingLogPolicy } from './sliding-log.js';
import { tokenBucket, tokenBucketPolicy } from './token-bucket.js';

export const policySchema = z.discriminatedUnion('algorithm', [
  fixedWindowPolicy,
  slidingLogPolicy,
  slidingCounterPolicy,
  tokenBucketPolicy,
  leakyBucketPolicy,
  concurrencyPolicy,
]);

/** A validated policy (defaults applied). */
export type Policy = z.infer<typeof policySchema>;
/** A policy as written by a user (defaults optional). */
export type PolicyInput = z.input<typeof policySchema>;
export type Algorithm = Policy['algorithm'];

/** Other names an algorithm is accepted under (in code, the rules file and `simulate`); parsing says the name itself. */
export const ALGORITHM_ALIASES = { [LEAKY_BUCKET_ALIAS]: 'leaky-bucket' } as const satisfies Record<string, Algorithm>;

export const ALGORITHMS = {
  'fixed-window': fixedWindow,
  'sliding-log': slidingLog,
  'sliding-counter': slidingCounter,
  'token-bucket': tokenBucket,
  'leaky-bucket': gcra,
  concurrency,
} as const satisfies Record<Algorithm, AlgorithmSpec<never>>;

/** The spec of a policy's algorithm. */
export function specOf(policy: Policy): AlgorithmSpec<Policy> {
  return ALGORITHMS[policy.algorithm] as unknown as AlgorithmSpec<Policy>;
}

/** Validates a policy; throws SLUICE_ERR_INVALID_POLICY naming every bad field. The result is frozen. */
export function parsePolicy(input: unknown): Policy {
  const parsed = policySchema.safeParse(input);
  if (!parsed.success) {
    const issues = issuesOf(parsed.error);
    throw new SluiceError('SLUICE_ERR_INVALID_POLICY', `invalid policy: ${describeIssues(issues)}`, { details: issues });
  }
  return Object.freeze(parsed.data);
}
