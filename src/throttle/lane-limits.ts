// The settings one lane runs at: the throttle's own, its plan's, or an operator's override of them
// (field by field). Admission and the outflow gate both ask here, so a lane is bounded and paced
// by the same numbers everywhere.
import type { PlanLimits, ThrottleConfig } from './config.js';

export interface LaneLimits {
  ratePerSecond: number;
  capacity: number;
  burst: number;
  /** 0: no max wait. */
  maxWaitMs: number;
}

/** Part of a lane's limits set at run time (an operator's override), read by every process. */
export type LaneOverride = Partial<LaneLimits>;

/** Where a throttle finds overrides (the admin control cache); absent: none. */
export interface LaneOverrides {
  override(queue: string, laneId: string): LaneOverride | undefined;
  /**
   * The control version this view is at least at (the shared change counter as last read; 0: none).
   * Sent with the lane scripts: a lane whose override is newer keeps it (lua/includes/lane.lua lane_limits).
   */
  readonly version: number;
}

/** The plan a submit's plan name stands for in this throttle: the named one, else the default plan. */
export function planOf(config: ThrottleConfig, plan: string | undefined): { name: string; limits: PlanLimits } | undefined {
  const plans = config.plans ?? {};
  const named = plan !== undefined ? plans[plan] : undefined;
  if (named) return { name: plan!, limits: named };
  const fallback = config.defaultPlan !== undefined ? plans[config.defaultPlan] : undefined;
  return fallback ? { name: config.defaultPlan!, limits: fallback } : undefined;
}

/** The limits of a lane: the plan's (or the throttle's), then the override's fields on top. */
export function laneLimitsOf(config: ThrottleConfig, plan: PlanLimits | undefined, override: LaneOverride | undefined): LaneLimits {
  const base: LaneLimits = plan
    ? { ratePerSecond: plan.ratePerSecond, capacity: plan.capacity, burst: plan.burst ?? config.burst, maxWaitMs: plan.maxWaitMs ?? config.maxWaitMs ?? 0 }
    : { ratePerSecond: config.ratePerSecond, capacity: config.capacity, burst: config.burst, maxWaitMs: config.maxWaitMs ?? 0 };
  return override ? { ...base, ...definedFields(override) } : base;
}

function definedFields(o: LaneOverride): LaneOverride {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as LaneOverride;
}

/** A short text naming limits, for caching the script wrappers made for them. */
export function limitsId(l: LaneLimits): string {
  return `${l.ratePerSecond}|${l.capacity}|${l.burst}|${l.maxWaitMs}`;
}
