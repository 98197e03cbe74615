// Fixed window counter: the policy schema and how a call becomes a lua/fixed-window.lua call.
import { z } from 'zod';
import type { AlgorithmSpec } from './algorithm.js';
import { policyBaseShape, positiveInt } from './policy-base.js';

/** `limit` units per window of `windowMs`; windows are aligned to the epoch. Cheap; up to 2x at a boundary. */
export const fixedWindowPolicy = z
  .object({ algorithm: z.literal('fixed-window'), limit: positiveInt, windowMs: positiveInt, ...policyBaseShape })
  .strict();
export type FixedWindowPolicy = z.infer<typeof fixedWindowPolicy>;

export const fixedWindow: AlgorithmSpec<FixedWindowPolicy, 'fixed-window'> = {
  script: 'fixed-window',
  suffix: 'f',
  unit: 'ms',
  limit: (p) => p.limit,
  policyArgs: (p) => ({ limit: p.limit, windowMs: p.windowMs }),
};
