// What the generic Limiter needs to know about one algorithm to turn a call into a script call.
import type { ScriptArg, ScriptName } from '../redis/scripts.js';
import type { Decision } from './decision.js';

export interface AlgorithmSpec<P> {
  /** The lua/ script that decides. */
  readonly script: ScriptName;
  /** Last key segment, so two algorithms on one identity never share state. */
  readonly suffix: string;
  /** Time unit of the script's time argument and replies. */
  readonly unit: 'ms' | 'us';
  /** The policy's size, reported as `limit` and the largest cost a call may have. */
  limit(policy: P): number;
  /** Script arguments after the time argument. */
  args(policy: P, cost: number, record: boolean, leaseId: string): ScriptArg[];
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
