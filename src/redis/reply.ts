// Shape checks for script replies: every reply is checked before it is used, so that something in
// front of Redis (a proxy, a wrong server) answering `+OK` becomes SLUICE_ERR_SCRIPT, never a decision.
import { SluiceError } from '../errors.js';

/** The error for a reply that does not have the shape `script` returns. */
export function malformedReply(script: string, reply: unknown): SluiceError {
  let shown: string;
  try {
    shown = JSON.stringify(reply) ?? String(reply);
  } catch {
    shown = String(reply);
  }
  return new SluiceError('SLUICE_ERR_SCRIPT', `${script} answered ${shown.slice(0, 200)}`);
}

/** `reply` as an array of `min`..`max` integers, or SLUICE_ERR_SCRIPT. */
export function integerArray(script: string, reply: unknown, min: number, max = min): number[] {
  if (!Array.isArray(reply) || reply.length < min || reply.length > max || !reply.every(Number.isInteger)) {
    throw malformedReply(script, reply);
  }
  return reply as number[];
}

/** `reply` as one integer, or SLUICE_ERR_SCRIPT. */
export function integerReply(script: string, reply: unknown): number {
  if (!Number.isInteger(reply)) throw malformedReply(script, reply);
  return reply as number;
}

/** True when `reply` is a decision script's `{allowed 0|1, remaining, retryAfter, resetAt}`. */
export function isDecisionReply(reply: unknown): reply is [0 | 1, number, number, number] {
  return Array.isArray(reply) && reply.length === 4 && isDecisionAt(reply, 0);
}

/** True when `reply[at .. at + 3]` is a decision: allowed 0|1, then three integers (lua/limits.lua's flat reply). */
export function isDecisionAt(reply: readonly unknown[], at: number): boolean {
  const a = reply[at];
  return at + 4 <= reply.length && (a === 0 || a === 1) && Number.isInteger(reply[at + 1]) && Number.isInteger(reply[at + 2]) && Number.isInteger(reply[at + 3]);
}
