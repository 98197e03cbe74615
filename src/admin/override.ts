// An operator's override of one lane's settings: the zod schema (the admin route's body and what is
// stored), and how a stored one reads back.
import { z } from 'zod';
import type { LaneOverride } from '../throttle/lane-limits.js';

/** PUT /v1/admin/queues/{queue}/overrides/{lane}: at least one setting, optionally until a time. */
export const overrideBodySchema = z
  .object({
    ratePerSecond: z.number().positive().max(100_000).optional(),
    capacity: z.number().int().positive().max(10_000_000).optional(),
    burst: z.number().int().nonnegative().max(1_000_000).optional(),
    maxWaitMs: z.number().int().positive().max(365 * 86_400_000).optional(),
    /** When the override ends by itself (ISO 8601); absent: until removed. */
    until: z.iso.datetime({ offset: true }).optional(),
  })
  .strict()
  .refine((o) => o.ratePerSecond !== undefined || o.capacity !== undefined || o.burst !== undefined || o.maxWaitMs !== undefined, {
    message: 'give at least one of ratePerSecond, capacity, burst, maxWaitMs',
    path: ['ratePerSecond'],
  });
export type OverrideBody = z.infer<typeof overrideBodySchema>;

/** An override as stored and listed. */
export interface StoredOverride extends LaneOverride {
  lane: string;
  /** Epoch ms when it ends; absent: until removed. */
  untilMs?: number;
  /** Who set it (the actor of the admin request). */
  by: string;
  atMs: number;
}

const storedSchema = z.object({
  ratePerSecond: z.number().optional(),
  capacity: z.number().optional(),
  burst: z.number().optional(),
  maxWaitMs: z.number().optional(),
  untilMs: z.number().optional(),
  by: z.string(),
  atMs: z.number(),
});

/** Reads a stored override; a value that does not parse (written by something else) is ignored. */
export function parseStored(lane: string, json: string): StoredOverride | undefined {
  try {
    const parsed = storedSchema.safeParse(JSON.parse(json));
    if (!parsed.success) return undefined;
    const o = parsed.data;
    return { lane, ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)), by: o.by, atMs: o.atMs } as StoredOverride;
  } catch {
    return undefined;
  }
}

/** The lane settings of an override (without who/when). */
export function limitsOfOverride(o: StoredOverride): LaneOverride {
  const out: LaneOverride = {};
  if (o.ratePerSecond !== undefined) out.ratePerSecond = o.ratePerSecond;
  if (o.capacity !== undefined) out.capacity = o.capacity;
  if (o.burst !== undefined) out.burst = o.burst;
  if (o.maxWaitMs !== undefined) out.maxWaitMs = o.maxWaitMs;
  return out;
}

/** True while the override is in force at `nowMs`. */
export function inForce(o: StoredOverride, nowMs: number): boolean {
  return o.untilMs === undefined || o.untilMs > nowMs;
}
