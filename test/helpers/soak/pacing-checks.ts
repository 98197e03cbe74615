// The outflow's guarantees over every recorded start (docs/algorithms.md, "Within a lane", "Under a
// global cap", "Pacing margin", "Upstream back-pressure", "Spend quotas"): per lane and in all, the most
// starts and cost units in any 1 s window, each lane's GCRA spacing, no start inside a pause, no key
// quota window starting more than its limit.
import type { Throttle } from '../../../src/index.js';
import { quotaWindows } from '../../../src/throttle/quota.js';
import type { Findings } from './findings.js';
import { groupBy, since, startsView, type PauseRecord, type StartEvent } from './records.js';
import { WORKLOAD } from './scenario.js';
import { maxIn1s, spacingFaults, type StartField } from './windows.js';

const FIELDS: StartField[] = ['t', 'slot'];
/** Slots are whole µs and intervals are floored to them: a meter's instant is exact to well within this. */
const SPACING_TOLERANCE_MS = 1;

export interface PacingFigures {
  lanes: number;
  perLane: Record<StartField, { maxStartsIn1s: number; maxUnitsIn1s: number }> & { startsBound: number; unitsBound: number; spacingFaults: number };
  global: Record<StartField, { maxStartsIn1s: number; maxUnitsIn1s: number }> & { cap?: number; unitsBound?: number };
  pauses: { lane: number; global: number; startsInside: number };
}

export function checkPacing(throttle: Throttle, starts: readonly StartEvent[], pauses: readonly PauseRecord[], t0: number, findings: Findings): PacingFigures {
  const { ratePerSecond, burst, globalRatePerSecond } = throttle.config;
  const margin = 1 + throttle.timing.marginPpm / 1e6;
  const byLane = groupBy(starts, (s) => s.lane);
  const startsBound = ratePerSecond + burst;
  // A job of cost c at a window's end: rate + burst + (c - 1) units at most (docs: "Pacing margin").
  const unitsBound = startsBound + WORKLOAD.maxCost - 1;
  const perLane = { t: { maxStartsIn1s: 0, maxUnitsIn1s: 0 }, slot: { maxStartsIn1s: 0, maxUnitsIn1s: 0 }, startsBound, unitsBound, spacingFaults: 0 };
  for (const [lane, list] of byLane) {
    for (const field of FIELDS) {
      const w = maxIn1s(list, field);
      perLane[field].maxStartsIn1s = Math.max(perLane[field].maxStartsIn1s, w.count);
      perLane[field].maxUnitsIn1s = Math.max(perLane[field].maxUnitsIn1s, w.units);
      if (w.count > startsBound) findings.violation(`lane-starts-per-1s(${field})`, 'a lane starts at most rate + burst jobs in any 1 s', { lane, starts: w.count, bound: startsBound, window: startsView(t0, w.countWindow) });
      if (w.units > unitsBound) findings.violation(`lane-units-per-1s(${field})`, 'a lane starts at most rate + burst + largest cost - 1 units in any 1 s', { lane, units: w.units, bound: unitsBound, window: startsView(t0, w.unitsWindow) });
      else if (field === 't' && w.units > ratePerSecond) findings.note('lane-units-per-1s-above-rate', 'documented: up to rate + burst + largest cost - 1 units in a 1 s window', { lane, units: w.units, rate: ratePerSecond, bound: unitsBound });
    }
    for (const fault of spacingFaults(list, (1000 / ratePerSecond) * margin, burst, SPACING_TOLERANCE_MS)) {
      perLane.spacingFaults++;
      findings.violation('lane-spacing(slot)', "a lane's starts follow its GCRA meter (cost x interval apart, burst units early)", { lane, start: startsView(t0, [fault.start])[0], earliest: since(t0, fault.earliest), before: startsView(t0, fault.before) });
    }
  }
  return { lanes: byLane.size, perLane, global: checkGlobal(starts, globalRatePerSecond, throttle.config.shards, t0, findings), pauses: checkPauses(throttle, starts, pauses, t0, findings) };
}

/**
 * The cap in any 1 s. A sharded throttle's shards each run at their share of the cap, re-divided as
 * demand moves: a window holding a re-division may hold one more start per shard whose share shrank
 * (docs/algorithms.md, "A throttle across a cluster": ε, at most `shards`), and in units each shard may
 * end a window with a job of the largest cost. Above the cap within those is a counted note; beyond, a
 * violation.
 */
function checkGlobal(starts: readonly StartEvent[], cap: number | undefined, shards: number, t0: number, findings: Findings): PacingFigures['global'] {
  const global: PacingFigures['global'] = { t: { maxStartsIn1s: 0, maxUnitsIn1s: 0 }, slot: { maxStartsIn1s: 0, maxUnitsIn1s: 0 } };
  const epsilon = shards > 1 ? shards : 0;
  const startsBound = cap ? cap + epsilon : undefined;
  // In units every shard's meter may end a window with a job of the largest cost (docs/algorithms.md:
  // "ε, what a re-division may add"): largest cost - 1 per shard, on top of ε.
  const unitsBound = cap ? cap + epsilon + Math.max(1, shards) * (WORKLOAD.maxCost - 1) : undefined;
  for (const field of FIELDS) {
    const w = maxIn1s(starts, field);
    global[field] = { maxStartsIn1s: w.count, maxUnitsIn1s: w.units };
    if (!cap) continue;
    const edges = (list: StartEvent[]) => ({ first: startsView(t0, list.slice(0, 3)), last: startsView(t0, list.slice(-3)) });
    if (w.count > startsBound!) findings.violation(`global-starts-per-1s(${field})`, 'the throttle starts at most globalRatePerSecond jobs in any 1 s (sharded: + one per shard)', { starts: w.count, cap, bound: startsBound, ...edges(w.countWindow) });
    else if (w.count > cap) findings.note(`global-starts-per-1s-within-epsilon(${field})`, "documented: a sharded throttle's re-division may add one start per shard in a 1 s window", { starts: w.count, cap, bound: startsBound });
    if (w.units > unitsBound!) findings.violation(`global-units-per-1s(${field})`, 'the throttle starts at most cap + largest cost - 1 units in any 1 s (sharded: + one per shard, and largest cost - 1 per shard)', { units: w.units, bound: unitsBound, ...edges(w.unitsWindow) });
    else if (field === 't' && w.units > cap) findings.note('global-units-per-1s-above-cap', 'documented: up to cap + largest cost - 1 units in a 1 s window', { units: w.units, cap, bound: unitsBound });
  }
  return cap ? { ...global, cap, unitsBound: unitsBound! } : global;
}

/**
 * No start inside a pause. A worker that had its start before the pause was set keeps it: its instant
 * is at most one horizon after its answer, so only starts assigned more than a horizon after the pause
 * call returned are held to it (2 ms for the clocks).
 */
function checkPauses(throttle: Throttle, starts: readonly StartEvent[], pauses: readonly PauseRecord[], t0: number, findings: Findings): PacingFigures['pauses'] {
  const horizonMs = throttle.timing.leadUs / 1000;
  let startsInside = 0;
  for (const p of pauses) {
    const inside = starts.filter((s) => (p.scope === 'global' || s.lane === p.lane) && s.slot >= p.answeredAt + horizonMs + 2 && s.slot < p.resumeAt - 1);
    if (inside.length === 0) continue;
    startsInside += inside.length;
    findings.violation('start-inside-pause', 'no start of a paused lane (or paused throttle) before the pause ends', {
      pause: { lane: p.lane, scope: p.scope, ms: p.ms, sent: since(t0, p.sentAt), answered: since(t0, p.answeredAt), resume: since(t0, p.resumeAt) },
      starts: startsView(t0, inside.slice(0, 5)),
    });
  }
  return { lane: pauses.filter((p) => p.scope === 'lane').length, global: pauses.filter((p) => p.scope === 'global').length, startsInside };
}

/**
 * A key quota's window never starts more than its limit (every handler start is a call: retries,
 * deferred calls and re-runs after the kill count too), by the recorded starts and by the quota's own
 * counter. Returns the most starts of one lane in one window.
 */
export async function checkKeyQuota(throttle: Throttle, starts: readonly StartEvent[], findings: Findings): Promise<{ limit: number; maxStartsInWindow: number } | undefined> {
  const quota = throttle.config.quotas?.find((q) => q.scope === 'key');
  if (!quota) return undefined;
  let maxStartsInWindow = 0;
  for (const [lane, list] of groupBy(starts, (s) => s.lane)) {
    for (const [windowStart, inWindow] of groupBy(list, (s) => String(quotaWindows(quota, s.slot).startMs))) {
      maxStartsInWindow = Math.max(maxStartsInWindow, inWindow.length);
      if (inWindow.length > quota.limit) findings.violation('quota-window-exceeded', "a key quota's window starts at most its limit", { lane, windowStart: new Date(Number(windowStart)).toISOString(), starts: inWindow.length, limit: quota.limit });
    }
    const [use] = await throttle.quotaUse(lane);
    if (use && use.used > quota.limit) findings.violation('quota-counter-above-limit', "a key quota's counter never passes its limit", { lane, used: use.used, limit: quota.limit });
  }
  return { limit: quota.limit, maxStartsInWindow };
}
