// The `http:` and `route_groups:` sections: how an HTTP request becomes descriptors, and the route
// groups that name a request's route.
import { z } from 'zod';
import { checkTrustedProxy } from '../request/identity.js';
import { checkRoutePattern } from '../request/route-groups.js';
import { keySchema, valueSchema } from './descriptor-schema.js';
import { nameSchema } from './limit-schema.js';

/** An HTTP field name (RFC 9110 token). */
export const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/;
/** The schema of a header name (see {@link HEADER_NAME}). */
export const headerNameSchema = z.string().regex(HEADER_NAME, 'not a valid header name');

/** The identity sources a descriptor entry can take its value from. */
export const NAMED_SOURCES = ['api_key', 'user', 'ip', 'route', 'method', 'plan'] as const;
/** One of {@link NAMED_SOURCES}. */
export type NamedSource = (typeof NAMED_SOURCES)[number];

/** `api_key`, `user`, `ip`, `route`, `method`, `plan` or `header:<Name>`. */
export const sourceSchema = z.string().refine(
  (s) => (NAMED_SOURCES as readonly string[]).includes(s) || /^header:[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(s),
  { message: `must be one of ${NAMED_SOURCES.join(', ')} or header:<Name>` },
);

/**
 * One entry of a descriptor template: `{ key, source }` or `{ key, value }` (a literal). A bare
 * string is short for `{ key: <it>, source: <it> }`; `header:X-Tenant` alone gets the key `x-tenant`.
 * `hash: true` hashes the value before it is used (always so for `api_key` and secret-looking headers).
 */
export const entrySchema = z.preprocess(
  (v) => (typeof v === 'string' ? { key: v.startsWith('header:') ? v.slice(7).toLowerCase() : v, source: v } : v),
  z
    .object({ key: keySchema, source: sourceSchema.optional(), value: valueSchema.optional(), hash: z.boolean().optional() })
    .strict()
    .refine((e) => (e.source === undefined) !== (e.value === undefined), { message: 'give exactly one of source or value' }),
);
/** A parsed descriptor template entry (shorthand expanded). */
export type EntrySpec = z.infer<typeof entrySchema>;

/** Where a user id (or a plan name) is read: a property path of the request (`user.id`) or a header. */
const lookupShape = {
  property: z
    .string()
    .regex(/^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/, 'a dotted property path such as user.id')
    .optional(),
  header: headerNameSchema.optional(),
  /** Believe the header only from a trusted proxy (default true: a client must not pick its own user or plan). */
  require_trusted_peer: z.boolean().optional(),
};

/** The `http:` section. */
export const httpSchema = z
  .object({
    /** The domain whose rules HTTP requests are matched against. */
    domain: nameSchema,
    /** Proxies whose X-Forwarded-For is believed: CIDR ranges, addresses, loopback, linklocal, uniquelocal. */
    trusted_proxies: z
      .array(z.string().superRefine((s, ctx) => {
        const problem = checkTrustedProxy(s);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }))
      .optional(),
    /** Prefix length that counts as one IPv4 client (default 32). */
    ipv4_prefix: z.number().int().min(8).max(32).optional(),
    /** Prefix length that counts as one IPv6 client (default 56: one customer's delegation). */
    ipv6_prefix: z.number().int().min(16).max(128).optional(),
    /** Header holding the API key (default X-API-Key); its value is always hashed. */
    api_key_header: headerNameSchema.optional(),
    user: z
      .object(lookupShape)
      .strict()
      .refine((u) => (u.property === undefined) !== (u.header === undefined), { message: 'give exactly one of property or header' })
      .optional(),
    plan: z
      .object({ ...lookupShape, default: nameSchema.optional() })
      .strict()
      .refine((p) => !(p.property !== undefined && p.header !== undefined), { message: 'give at most one of property or header' })
      .refine((p) => p.property !== undefined || p.header !== undefined || p.default !== undefined, {
        message: 'give property, header or default',
      })
      .optional(),
    /** Descriptor templates; a request yields one descriptor per template whose sources all have a value. */
    descriptors: z.array(z.array(entrySchema).min(1, 'a descriptor needs at least one entry')).min(1, 'give at least one descriptor template'),
  })
  .strict();
/** A parsed `http:` section. */
export type HttpSpec = z.infer<typeof httpSchema>;

const patternSchema = z.string().superRefine((p, ctx) => {
  const problem = checkRoutePattern(p);
  if (problem) ctx.addIssue({ code: 'custom', message: problem });
});

/** A route group: `[patterns...]`, or `{ paths: [...], methods: [...] }`. */
export const routeGroupSchema = z.preprocess(
  (v) => (Array.isArray(v) ? { paths: v } : v),
  z
    .object({
      paths: z.array(patternSchema).min(1, 'give at least one path pattern'),
      methods: z.array(z.string().regex(/^[A-Za-z]+$/, 'an HTTP method such as GET').transform((m) => m.toUpperCase())).min(1).optional(),
    })
    .strict(),
);

/** The `route_groups:` section: group name -> group, in match order. */
export const routeGroupsSchema = z.record(nameSchema, routeGroupSchema);
