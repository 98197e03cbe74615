// Every queue's settings and live figures, as GET /v1/admin/queues and the dashboard's stream
// (GET /v1/admin/stream) show them: one function, so the two never differ.
import { readFigures } from '../../admin/figures.js';
import type { QueueRule } from '../../rules/index.js';
import type { Throttle } from '../../throttle/throttle.js';
import type { z } from 'zod';
import { iso, queueOf, type AdminContext } from './context.js';
import type { queuesResponseSchema } from './schemas.js';

export type Overview = z.input<typeof queuesResponseSchema>['queues'][number];

/** The overview of every queue of the rules in force. */
export async function queueOverviews(ctx: AdminContext): Promise<Overview[]> {
  const queues = ctx.deps.rules.current().queues;
  return Promise.all(queues.map(async (q) => overview(ctx, q, (await queueOf(ctx, q.name)).throttle)));
}

async function overview(ctx: AdminContext, q: QueueRule, throttle: Throttle): Promise<Overview> {
  const redis = ctx.deps.sluice.redis;
  const now = Date.now();
  // A sharded throttle: its shards' queues, busy lanes and global meters, summed (the latest meter).
  const shards = await Promise.all(
    throttle.shards.map(async (t) => {
      const bull = await t.bullQueue();
      return Promise.all([
        bull.getJobCounts('waiting', 'delayed', 'prioritized', 'active', 'failed'),
        redis.zcard(t.keys.busy),
        bull.isPaused(),
        throttle.config.globalRatePerSecond ? redis.hget(t.keys.global, 's') : Promise.resolve(null),
      ]);
    }),
  );
  const [control, figures, overrides, shares, silentUnits] = await Promise.all([
    ctx.store.control(throttle.keys),
    readFigures(redis, ctx.keys, throttle.keys, now),
    // The overrides in force: an ended one stays stored until a process ends it (override-end.ts).
    ctx.store.overrides(throttle.keys, now).then((o) => o.inForce.length),
    throttle.shareAllocator?.read(),
    throttle.silentUnits(),
  ]);
  const counts: Record<string, number> = {};
  for (const [c] of shards) for (const [k, v] of Object.entries(c)) counts[k] = (counts[k] ?? 0) + v;
  const busyLanes = shards.reduce((a, [, b]) => a + b, 0);
  const paused = shards.some(([, , p]) => p);
  const slots = shards.map(([, , , s]) => s).filter((s): s is string => s !== null);
  const globalSlot = slots.length > 0 ? String(Math.max(...slots.map(Number))) : null;
  const c = throttle.config;
  const globalBookedMs = globalSlot === null ? undefined : Math.ceil(Number(globalSlot) / 1000);
  return {
    name: q.name,
    config: {
      ratePerSecond: c.ratePerSecond,
      capacity: c.capacity,
      burst: c.burst,
      ...(c.maxWaitMs !== undefined ? { maxWaitMs: c.maxWaitMs } : {}),
      ...(c.globalRatePerSecond !== undefined ? { globalRatePerSecond: c.globalRatePerSecond } : {}),
      key: q.key.type === 'header' ? `header:${q.key.name}` : q.key.type,
      plans: c.plans ?? {},
      ...(c.defaultPlan !== undefined ? { defaultPlan: c.defaultPlan } : {}),
    },
    live: {
      queued: (counts.waiting ?? 0) + (counts.delayed ?? 0) + (counts.prioritized ?? 0),
      active: counts.active ?? 0,
      failed: counts.failed ?? 0,
      busyLanes,
      silentUnits,
      ...figures,
      paused: paused || control.paused,
      ...(control.pauseUntilMs !== undefined ? { pausedUntil: iso(control.pauseUntilMs) } : {}),
      draining: control.draining,
      ...(c.globalRatePerSecond
        ? {
            globalCap: {
              ratePerSecond: c.globalRatePerSecond,
              inUse: figures.startedLast1s / c.globalRatePerSecond,
              ...(globalBookedMs !== undefined && globalBookedMs > now ? { bookedUntil: iso(globalBookedMs) } : {}),
              ...(shares ? { shards: shares.map((s, shard) => ({ shard, ...s })) } : {}),
            },
          }
        : {}),
      overrides,
    },
  };
}
