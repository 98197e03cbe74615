// One-line human descriptions of policies, for `sluice check-config`, `sluice simulate` and logs.
import type { Policy } from '../limiters/policy.js';
import { formatDuration } from './duration.js';

/** A number with at most 3 decimals and no trailing zeros: 16.666666 -> '16.667'. */
export function formatNumber(n: number): string {
  return String(Math.round(n * 1000) / 1000);
}

/**
 * What a policy allows, in words: `fixed-window 5 per 1m`, `token-bucket capacity 100, refill 1.667/s`.
 * @param options.operational also name the fail mode and timeout (default true).
 */
export function describePolicy(policy: Policy, options: { operational?: boolean } = {}): string {
  let text: string;
  switch (policy.algorithm) {
    case 'fixed-window':
      text = `fixed-window ${policy.limit} per ${formatDuration(policy.windowMs)}`;
      break;
    case 'sliding-log':
      text = `sliding-log ${policy.limit} per ${formatDuration(policy.windowMs)}${policy.recordRejected ? ', refusals logged' : ''}`;
      break;
    case 'sliding-counter':
      text = `sliding-counter ${policy.limit} per ${formatDuration(policy.windowMs)}${policy.rounding === 'ceil' ? ', rounding up' : ''}`;
      break;
    case 'token-bucket':
      text = `token-bucket capacity ${policy.capacity}, refill ${formatNumber(policy.refillPerSecond)}/s`;
      break;
    case 'leaky-bucket':
      text = `leaky-bucket ${formatNumber(policy.ratePerSecond)}/s, burst ${policy.burst}`;
      break;
    case 'concurrency':
      text = `concurrency ${policy.limit} in flight, lease ${formatDuration(policy.leaseMs)}`;
      break;
  }
  if (options.operational === false) return text;
  return `${text}; fail ${policy.failMode}, timeout ${formatDuration(policy.timeoutMs)}`;
}
