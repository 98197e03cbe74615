// Replays call times through policies with an injected clock: through the reference models (pure,
// no Redis), or through the real Lua scripts on a Redis server.
import { randomBytes } from 'node:crypto';
import { SluiceError } from '../errors.js';
import type { Decision } from '../limiters/decision.js';
import { modelFor } from '../limiters/model.js';
import type { Policy } from '../limiters/policy.js';
import { createSluice } from '../sluice.js';

/** One decision of a replay, without the (random) lease id. */
export type SimulatedDecision = Omit<Decision, 'leaseId'>;

/** What to replay. */
export interface Replay {
  policies: readonly Policy[];
  /** Call times in seconds from the epoch, non-decreasing. */
  timesS: readonly number[];
  /** Units each call costs. */
  cost: number;
}

/** decisions[i][p]: the decision of policy p for call i. */
export type ReplayResult = SimulatedDecision[][];

function strip(d: Decision): SimulatedDecision {
  const { leaseId: _lease, ...rest } = d;
  return rest;
}

/** Replays through each policy's reference model (`modelFor`), each policy on its own fresh state. */
export function replayModels(replay: Replay): ReplayResult {
  const models = replay.policies.map((p) => modelFor(p));
  return replay.timesS.map((t) => models.map((m) => strip(m.decide(t * 1000, replay.cost))));
}

/**
 * Replays through the real scripts on the Redis at `url`, with `nowMs` injected, under a fresh key
 * prefix; the keys it made are deleted afterwards.
 */
export async function replayRedis(replay: Replay, url: string): Promise<ReplayResult> {
  const sluice = createSluice({ redis: url, prefix: `sim${randomBytes(4).toString('hex')}` });
  const key = 'simulate';
  try {
    // A first connection can take longer than a production deadline; the replay is not about latency.
    const limiters = replay.policies.map((p) => sluice.limiter({ ...p, timeoutMs: Math.max(p.timeoutMs, 5_000), failMode: 'closed' }));
    const out: ReplayResult = [];
    for (const t of replay.timesS) {
      const row: SimulatedDecision[] = [];
      for (const limiter of limiters) {
        const d = await limiter.limit(key, { nowMs: t * 1000, cost: replay.cost });
        if (d.failure) throw new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', `simulate: Redis at ${url} did not answer within 5 s`);
        row.push(strip(d));
      }
      out.push(row);
    }
    await Promise.all(limiters.map((l) => l.reset(key)));
    return out;
  } finally {
    await sluice.close();
  }
}
