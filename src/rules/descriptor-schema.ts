// The `domains:` section: Envoy-style descriptor trees. A node matches one request descriptor
// entry (`key`, optional `value`); a node that limits carries limit fields, a plan, or `unlimited`.
import { z } from 'zod';
import { limitShape, nameSchema } from './limit-schema.js';

/** A descriptor key: what a request descriptor entry is called (`api_key`, `route`, `tenant`). */
export const KEY = /^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,63}$/;
/** The schema of a descriptor key (see {@link KEY}). */
export const keySchema = z.string().regex(KEY, 'letters, digits, "_", ".", ":", "-" (at most 64)');

/** A descriptor value: exact, or with one trailing `*` a prefix (`*` alone matches any value). Numbers are read as text. */
export const valueSchema = z
  .union([z.string(), z.number(), z.boolean()])
  .transform((v) => String(v))
  .pipe(
    z
      .string()
      .min(1, 'must not be empty')
      .max(256)
      .refine((v) => !v.slice(0, -1).includes('*'), 'only a trailing * is a wildcard'),
  );

/** One descriptor node as written in the file. */
export interface DescriptorNodeSpec {
  key: string;
  value?: string | undefined;
  name?: string | undefined;
  plan?: string | undefined;
  unlimited?: boolean | undefined;
  rate_limit?: z.infer<typeof limitShape.rate_limit>;
  algorithm?: z.infer<typeof limitShape.algorithm>;
  policy?: z.infer<typeof limitShape.policy>;
  fail_mode?: z.infer<typeof limitShape.fail_mode>;
  timeout?: number | undefined;
  shadow_mode?: boolean | undefined;
  descriptors?: DescriptorNodeSpec[] | undefined;
}

/** The fields of a node other than its children (also parsed on their own by the semantic checks). */
export const nodeShape = {
  key: keySchema,
  value: valueSchema.optional(),
  /** Name for metrics and logs; default: a stable id from the node's path. */
  name: nameSchema.optional(),
  /** Take the limit from this plan. */
  plan: nameSchema.optional(),
  /** Matched requests are never limited (an exception below a broader rule). */
  unlimited: z.boolean().optional(),
  ...limitShape,
};

/** A descriptor node and, recursively, its children. */
export const descriptorNodeSchema: z.ZodType<DescriptorNodeSpec, unknown> = z.lazy(() =>
  z.object({ ...nodeShape, descriptors: z.array(descriptorNodeSchema).optional() }).strict(),
);

/** A node's own fields, children ignored, for checks that must run even when a child is broken. */
export const nodeOwnSchema = z.object({ ...nodeShape, descriptors: z.unknown().optional() }).strict();

/** One domain: a name and its descriptor tree. */
export const domainSchema = z
  .object({
    domain: nameSchema,
    descriptors: z.array(descriptorNodeSchema),
  })
  .strict();
/** A parsed domain. */
export type DomainSpec = z.infer<typeof domainSchema>;
