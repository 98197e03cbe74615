// Turns a rule's limit fields (rate_limit + algorithm, or policy, plus fail_mode and timeout) into
// the camelCase policy the limiters take, and a policy field back into the file path it came from.
import { parsePolicy, type Policy, type PolicyInput } from '../limiters/policy.js';
import { isSluiceError } from '../errors.js';
import type { Issue } from '../validation.js';
import { UNIT_MS, type LimitPart } from './limit-schema.js';

/** The default algorithm of a `rate_limit`: accurate without a member per call. */
export const DEFAULT_RATE_ALGORITHM = 'sliding-counter';

/** Policy field -> key under `policy:` (the snake_case name; `*Ms` fields drop the suffix). */
const POLICY_BLOCK_KEY: Record<string, string> = {
  algorithm: 'algorithm',
  limit: 'limit',
  windowMs: 'window',
  capacity: 'capacity',
  refillPerSecond: 'refill_per_second',
  ratePerSecond: 'rate_per_second',
  burst: 'burst',
  recordRejected: 'record_rejected',
  rounding: 'rounding',
  leaseMs: 'lease',
};

/** Policy field -> where a `rate_limit` sets it. */
const RATE_LIMIT_PATH: Record<string, readonly string[]> = {
  limit: ['rate_limit', 'requests_per_unit'],
  capacity: ['rate_limit', 'requests_per_unit'],
  refillPerSecond: ['rate_limit', 'requests_per_unit'],
  ratePerSecond: ['rate_limit', 'requests_per_unit'],
  windowMs: ['rate_limit', 'unit'],
  burst: ['rate_limit', 'burst'],
  algorithm: ['algorithm'],
};

/** Rule-level fields every policy shares. */
const SHARED_PATH: Record<string, readonly string[]> = { failMode: ['fail_mode'], timeoutMs: ['timeout'], name: ['name'] };

/**
 * The policy input a rule's limit fields describe, or undefined when they describe none
 * (no `rate_limit` and no `policy`). A `rate_limit` of n per unit maps to:
 * windows {limit: n, windowMs: unit}; token bucket {capacity: n, refillPerSecond: n / unit};
 * leaky bucket {ratePerSecond: n / unit, burst: rate_limit.burst} (without one, the policy's default burst).
 * @param name the policy name (the rule's name: its key namespace, metric label and log field).
 */
export function policyInputOf(limit: LimitPart, name: string | undefined): PolicyInput | undefined {
  const shared = {
    ...(name === undefined ? {} : { name }),
    ...(limit.fail_mode === undefined ? {} : { failMode: limit.fail_mode }),
    ...(limit.timeout === undefined ? {} : { timeoutMs: limit.timeout }),
  };
  if (limit.policy) {
    const { algorithm, window, lease, refill_per_second, rate_per_second, record_rejected, ...same } = limit.policy;
    const input: Record<string, unknown> = { algorithm, ...same, ...shared };
    if (window !== undefined) input.windowMs = window;
    if (lease !== undefined) input.leaseMs = lease;
    if (refill_per_second !== undefined) input.refillPerSecond = refill_per_second;
    if (rate_per_second !== undefined) input.ratePerSecond = rate_per_second;
    if (record_rejected !== undefined) input.recordRejected = record_rejected;
    return input as PolicyInput;
  }
  const rl = limit.rate_limit;
  if (!rl) return undefined;
  const n = rl.requests_per_unit;
  const unitMs = UNIT_MS[rl.unit];
  const perSecond = (n * 1000) / unitMs;
  const algorithm = limit.algorithm ?? DEFAULT_RATE_ALGORITHM;
  switch (algorithm) {
    case 'token-bucket':
      return { algorithm, capacity: n, refillPerSecond: perSecond, ...shared };
    case 'leaky-bucket':
      return { algorithm, ratePerSecond: perSecond, ...(rl.burst === undefined ? {} : { burst: rl.burst }), ...shared };
    default:
      return { algorithm, limit: n, windowMs: unitMs, ...shared } as PolicyInput;
  }
}

/** The file path (relative to the rule) a policy field came from. */
export function filePathOf(field: string, limit: LimitPart): readonly string[] {
  const shared = SHARED_PATH[field];
  if (shared) return shared;
  if (limit.policy) return ['policy', POLICY_BLOCK_KEY[field] ?? field];
  return RATE_LIMIT_PATH[field] ?? ['rate_limit'];
}

/** A policy problem, at a path relative to the rule. */
export interface RelativeIssue {
  path: readonly string[];
  message: string;
  /** The issue is about the field's key (a field the algorithm does not take). */
  atKey?: boolean;
}

/**
 * Validates the policy of a rule through `parsePolicy` (the one policy schema), translating each
 * issue to the rule's own field.
 */
export function checkPolicy(input: PolicyInput, limit: LimitPart): { policy?: Policy; issues: RelativeIssue[] } {
  try {
    return { policy: parsePolicy(input), issues: [] };
  } catch (e) {
    if (!isSluiceError(e, 'SLUICE_ERR_INVALID_POLICY')) throw e;
    const algorithm = String(input.algorithm);
    const issues = (e.details as Issue[]).map((i): RelativeIssue => {
      const field = i.path.split('.')[0] ?? '';
      const path = filePathOf(field, limit);
      if (i.code === 'unrecognized_keys') return { path, message: `not a ${algorithm} parameter`, atKey: true };
      if (i.code === 'invalid_type' && / received undefined$/.test(i.message)) return { path, message: `required for ${algorithm}` };
      return { path, message: i.message };
    });
    return { issues };
  }
}
