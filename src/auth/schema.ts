// The rules file's `auth:` section: API keys mapped to tenants (as hashes, or from where the raw key
// is), each tenant's plan — or `none`, said explicitly.
import { z } from 'zod';

/** Tenant and plan names: they end up in lane ids, job data, logs and metric labels. */
export const TENANT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const tenantNameSchema = z.string().regex(TENANT_NAME, 'letters, digits, ".", "_", "-", starting with a letter or digit (at most 64)');

/** `sha256:<64 hex digits>`: the SHA-256 of the key (`printf %s "$KEY" | sha256sum`). */
export const keyHashSchema = z
  .string()
  .regex(/^sha256:[0-9a-fA-F]{64}$/, 'a key is given as sha256:<64 hex digits> (the SHA-256 of the key), { env: VAR } or { file: path }; never the key itself');

/** Where a raw key is: read once at load and hashed at once. */
export const keySourceSchema = z.union([
  keyHashSchema,
  z.object({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name') }).strict(),
  z.object({ file: z.string().min(1) }).strict(),
]);
export type KeySourceSpec = z.infer<typeof keySourceSchema>;

export const tenantSchema = z
  .object({
    /** The tenant's plan: a plan name some queue's `plans` defines. */
    plan: tenantNameSchema.optional(),
    /** Several keys: rotation (add the new key, move callers, remove the old one). */
    keys: z.array(keySourceSchema).min(1).max(100),
  })
  .strict();
export type TenantSpec = z.infer<typeof tenantSchema>;

/** `auth: none`, or the tenants and their keys. */
export const authSchema = z.union([
  z.literal('none'),
  z.object({ tenants: z.record(tenantNameSchema, tenantSchema) }).strict(),
]);
export type AuthSpec = z.infer<typeof authSchema>;
