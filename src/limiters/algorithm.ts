// What the generic Limiter needs to know about one algorithm to turn a call into a script call.
import type { BatchedScript, ScriptArgv } from '../redis/script-table.js';
import type { Decision } from './decision.js';

/** The ARGV of a decision script that differ per call; the Limiter fills them (src/limiters/decision-args.ts). */
export const CALL_ARGS = ['now', 'cost', 'record', 'leaseId'] as const;
export type CallArgName = (typeof CALL_ARGS)[number];

/** The ARGV of decision script `N` that come from the policy, by name. */
export type PolicyArgv<N extends BatchedScript> = N extends BatchedScript ? Omit<ScriptArgv<N>, CallArgName> : never;

export interface AlgorithmSpec<P, N extends BatchedScript = BatchedScript> {
  /** The lua/ script that decides. */
  readonly script: N;
  /** The key's last letter (after the hash tag), so two algorithms on one identity never share state. */
  readonly suffix: string;
  /** Time unit of the script's time argument and replies. */
  readonly unit: 'ms' | 'us';
  /** The policy's size, reported as `limit` and the largest cost a call may have. */
  limit(policy: P): number;
  /** The script arguments the policy decides, by name (the per-call ones are CALL_ARGS). */
  policyArgs(policy: P): PolicyArgv<N>;
}

/** A pure, in-memory reference model of an algorithm, for property tests and `sluice simulate`. */
export interface LimiterModel {
  /** Decides a call at `nowMs` (epoch ms) of `cost`; `record` false = peek. */
  decide(nowMs: number, cost: number, record?: boolean): Decision;
}

/** Rounds the caller's ms to the unit a script works in, exactly as the time argument does. */
export function toUnit(nowMs: number, unit: 'ms' | 'us'): number {
  return unit === 'us' ? Math.round(nowMs * 1000) : Math.round(nowMs);
}
