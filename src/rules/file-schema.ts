// The whole rules file: its top-level sections, and the error wording shared by all of them.
import { z } from 'zod';
import { authSchema } from '../auth/schema.js';
import { domainSchema } from './descriptor-schema.js';
import { httpSchema, routeGroupsSchema } from './http-schema.js';
import { nameSchema, planSchema } from './limit-schema.js';
import { queueSchema } from './queue-schema.js';

/** The rules file, as written (snake_case); every section is optional. */
export const rulesFileSchema = z
  .object({
    domains: z.array(domainSchema).optional(),
    plans: z.record(nameSchema, planSchema).optional(),
    route_groups: routeGroupsSchema.optional(),
    http: httpSchema.optional(),
    queues: z.array(queueSchema).optional(),
    /** Who may call: API keys per tenant (as hashes), or `none`. `sluice serve` needs this section. */
    auth: authSchema.optional(),
    /** Which hosts a submit's `callback_url` may name (exact names or IPs, or `*.domain`). */
    callbacks: z
      .object({
        allow: z
          .array(
            z
              .string()
              .min(1)
              .max(253)
              .regex(/^(\*\.)?[A-Za-z0-9.:_-]+$/, 'a host name, an IP address, or *.domain'),
          )
          .max(1000),
      })
      .strict()
      .optional(),
    /**
     * A descriptor key (e.g. `api_key`): a rule whose descriptor has an entry of that key keeps its
     * limiter keys in that entry's Redis Cluster slot, so the rules one client's request matches are
     * decided in one script call on a cluster too. Absent: the client-identity key most `http:`
     * templates share (src/rules/slot-key.ts); `false`: each rule's key has a slot of its own.
     */
    slot_key: z.union([z.literal(false), z.string().min(1).max(64).regex(/^[A-Za-z0-9._-]+$/, 'a descriptor key')]).optional(),
    /** Which rate-limit header sets responses carry (every one on by default, IETF draft-11). */
    response_headers: z
      .object({
        retry_after: z.boolean().optional(),
        ietf: z.enum(['draft-11', 'draft-07', 'none']).optional(),
        legacy: z.boolean().optional(),
        legacy_reset: z.enum(['epoch-seconds', 'delta-seconds']).optional(),
      })
      .strict()
      .optional(),
  })
  .strict();
/** A parsed rules file (before compilation). */
export type RulesFileSpec = z.infer<typeof rulesFileSchema>;

/** Error wording for a rules file parse: a missing field says so instead of "expected string, received undefined". */
export function rulesErrorMap(issue: {
  code?: string;
  input?: unknown;
  path?: PropertyKey[];
  expected?: string;
  issues?: readonly { message: string }[];
}): string | undefined {
  // A bad key of a record (a header, plan or route group name): say which, and why.
  if (issue.code === 'invalid_key') return `bad name '${String(issue.input)}': ${issue.issues?.[0]?.message ?? 'invalid'}`;
  if (issue.code !== 'invalid_type') return undefined;
  if (issue.input === undefined) return 'required field is missing';
  if ((issue.path?.length ?? 0) === 0) return 'the rules file must be a mapping with domains, plans, route_groups, http, queues, auth, callbacks, slot_key and/or response_headers';
  const got = issue.input === null ? 'null' : Array.isArray(issue.input) ? 'a list' : typeof issue.input;
  return `expected ${issue.expected === 'object' ? 'a mapping' : issue.expected === 'array' ? 'a list' : issue.expected}, got ${got}`;
}
