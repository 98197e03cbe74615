// Concurrency limit: the policy schema and how a call becomes a lua/concurrency-acquire.lua call.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { AlgorithmSpec } from './algorithm.js';
import { policyBaseShape, positiveInt } from './policy-base.js';

/**
 * At most `limit` units in flight per key. An allowed call holds a lease until `release`, or until
 * `leaseMs` passes (the holder died); `extend` keeps a long operation's lease alive.
 */
export const concurrencyPolicy = z
  .object({
    algorithm: z.literal('concurrency'),
    limit: positiveInt.max(100_000),
    leaseMs: positiveInt.max(7 * 24 * 3600 * 1000),
    ...policyBaseShape,
  })
  .strict();
export type ConcurrencyPolicy = z.infer<typeof concurrencyPolicy>;

/** A fresh lease id; a lease of cost c > 1 carries "~c" so release and extend know its size. */
export function newLeaseId(cost: number): string {
  const id = randomBytes(12).toString('base64url');
  return cost === 1 ? id : `${id}~${cost}`;
}

export const concurrency: AlgorithmSpec<ConcurrencyPolicy, 'concurrency-acquire'> = {
  script: 'concurrency-acquire',
  suffix: 'n',
  unit: 'ms',
  limit: (p) => p.limit,
  policyArgs: (p) => ({ limit: p.limit, leaseMs: p.leaseMs }),
};
