// Fields every decision policy shares, and the number types the policies are built from.
import { z } from 'zod';
import { NAME_PATTERN } from '../redis/keys.js';

// The one name pattern, for the rooms above that do not import src/redis/ (the rules file).
export { NAME_PATTERN, NAME_RULE } from '../redis/keys.js';

/** Integers up to 2^53 stay exact inside Lua (doubles); every product a script forms must fit. */
export const MAX_EXACT = 2 ** 53 - 1;

export const positiveInt = z.number().int().positive().max(1e12);
export const nonNegativeInt = z.number().int().nonnegative().max(1e12);

/** Shared policy fields. */
export const policyBaseShape = {
  /** Namespace of the keys; defaults to the algorithm and a hash of its parameters. */
  name: z
    .string()
    .regex(NAME_PATTERN, 'letters, digits, ".", "_", "-" (at most 64)')
    .optional(),
  /** What a decision says when Redis cannot answer in time: 'open' allows, 'closed' refuses. */
  failMode: z.enum(['open', 'closed']).default('open'),
  /** Deadline for one decision in ms, including waiting for a connection (default 200). */
  timeoutMs: z.number().int().positive().max(60_000).default(200),
};
