// Pure measures over a list of starts: the most starts and cost units in any 1 s window, and the GCRA
// spacing of a lane's assigned instants. Starts are measured by their handler's start (`t`) or by the
// instant the gate assigned (`slot`): the first is what an upstream sees, the second what the meters
// decided.
import type { StartEvent } from './records.js';

export type StartField = 't' | 'slot';

export interface WindowMax {
  /** The most starts in any half-open 1 s window, and the starts of one such window. */
  count: number;
  countWindow: StartEvent[];
  /** The most cost units started in any half-open 1 s window, and the starts of one such window. */
  units: number;
  unitsWindow: StartEvent[];
}

/** The busiest 1 s windows ([x, x + 1000 ms)) of `starts` by `field`. */
export function maxIn1s(starts: readonly StartEvent[], field: StartField): WindowMax {
  const xs = [...starts].sort((a, b) => a[field] - b[field]);
  let lo = 0;
  let units = 0;
  const best = { count: 0, countAt: 0, units: 0, unitsAt: 0, unitsEnd: 0 };
  for (let hi = 0; hi < xs.length; hi++) {
    units += xs[hi]!.cost;
    while (xs[hi]![field] - xs[lo]![field] >= 1000) units -= xs[lo++]!.cost;
    if (hi - lo + 1 > best.count) Object.assign(best, { count: hi - lo + 1, countAt: lo });
    if (units > best.units) Object.assign(best, { units, unitsAt: lo, unitsEnd: hi + 1 });
  }
  return { count: best.count, countWindow: xs.slice(best.countAt, best.countAt + best.count), units: best.units, unitsWindow: xs.slice(best.unitsAt, best.unitsEnd) };
}

export interface SpacingFault {
  start: StartEvent;
  /** The earliest instant the lane's meter allowed it (ms). */
  earliest: number;
  /** The starts just before it, by instant. */
  before: StartEvent[];
}

/**
 * The lane's assigned instants against its GCRA meter (docs/algorithms.md, "Within a lane"): each start
 * no earlier than the meter less `burst` intervals, the meter then moving on by `cost` intervals from
 * max(meter, start). Intervals carry the pacing margin, as the scripts' span() does. Starts at one
 * instant (a burst) are taken largest cost last, the order most favourable to the meter: the check
 * flags only what no order of them explains.
 */
export function spacingFaults(starts: readonly StartEvent[], intervalMs: number, burst: number, toleranceMs: number): SpacingFault[] {
  const xs = [...starts].sort((a, b) => a.slot - b.slot || a.cost - b.cost);
  const faults: SpacingFault[] = [];
  let tat = -Infinity;
  xs.forEach((x, i) => {
    const earliest = tat - burst * intervalMs;
    if (x.slot < earliest - toleranceMs) faults.push({ start: x, earliest, before: xs.slice(Math.max(0, i - 3), i) });
    tat = Math.max(tat, x.slot) + x.cost * intervalMs;
  });
  return faults;
}
