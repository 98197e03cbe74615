// The one cost check: a call's cost is a whole number of units, at least 1, and no larger than what
// it is charged against could ever hold (a policy's limit, a lane's capacity).
import { SluiceError } from '../errors.js';

/**
 * `cost` (default 1) when it is an integer in [1, max]; else SLUICE_ERR_INVALID_COST. `size` names what
 * `max` is and `never` says what could not happen, for the message: "the policy's limit",
 * "such a call could never be allowed".
 */
export function checkCost(cost: number | undefined, max: number, size: string, never: string): number {
  if (cost === undefined) return 1;
  if (!Number.isInteger(cost) || cost < 1) {
    throw new SluiceError('SLUICE_ERR_INVALID_COST', `cost: must be an integer >= 1 (got ${String(cost)})`);
  }
  if (cost > max) throw new SluiceError('SLUICE_ERR_INVALID_COST', `cost: ${cost} is larger than ${size} ${max}; ${never}`);
  return cost;
}
