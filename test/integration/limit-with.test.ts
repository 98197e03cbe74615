// Limiter.limitWith, the HTTP edge's promise-free `limit`: the same decisions as `limit`, each call
// answered exactly once (at once when the deny cache refuses or the call cannot be made). A
// callback must not throw (the middleware's catch everything): a batch is answered in one loop.
import { describe, expect, it } from 'vitest';
import type { Decision } from '../../src/index.js';
import { useBackend } from '../helpers/fixtures.js';

const ctx = useBackend('single');

function collect() {
  const answers: { decision?: Decision; error?: unknown }[] = [];
  return {
    answers,
    done: (decision: Decision) => void answers.push({ decision }),
    failed: (error: unknown) => void answers.push({ error }),
  };
}

describe('limitWith', () => {
  it('decides as limit does: the limit exactly, then refusals, the deny cache answering at once', async () => {
    const sluice = ctx.backend.sluice();
    await sluice.ready();
    const policy = { algorithm: 'fixed-window', limit: 3, windowMs: 60_000 } as const;
    const withCallbacks = sluice.limiter(policy, { denyCache: true });
    const c = collect();
    for (let i = 0; i < 5; i++) withCallbacks.limitWith('k', {}, c.done, c.failed);
    expect(c.answers).toHaveLength(0); // sent in one batch, answered with its reply
    await new Promise((r) => setTimeout(r, 200));
    expect(c.answers.map((a) => a.decision!.allowed)).toEqual([true, true, true, false, false]);
    expect(c.answers.map((a) => a.decision!.remaining)).toEqual([2, 1, 0, 0, 0]);
    // Refused until the window ends: the deny cache answers inside the call.
    withCallbacks.limitWith('k', {}, c.done, c.failed);
    expect(c.answers).toHaveLength(6);
    expect(c.answers[5]!.decision!.allowed).toBe(false);
    // A cost over the limit cannot be made: the error, at once, once.
    withCallbacks.limitWith('k', { cost: 4 }, c.done, c.failed);
    expect(c.answers).toHaveLength(7);
    expect((c.answers[6]!.error as { code?: string }).code).toBe('SLUICE_ERR_INVALID_COST');
    await new Promise((r) => setTimeout(r, 50));
    expect(c.answers).toHaveLength(7);
    await sluice.close();
  });

  it('answers a batch of keys from the reply (not the deadline), each once', async () => {
    const sluice = ctx.backend.sluice();
    await sluice.ready();
    const limiter = sluice.limiter({ algorithm: 'token-bucket', capacity: 2, refillPerSecond: 1 });
    const c = collect();
    for (const k of ['a', 'b', 'a', 'a', 'c']) limiter.limitWith(k, {}, c.done, c.failed);
    await new Promise((r) => setTimeout(r, 300));
    expect(c.answers.map((a) => a.decision?.allowed)).toEqual([true, true, true, false, true]);
    expect(c.answers.every((a) => a.decision && a.decision.failure === undefined)).toBe(true);
    await sluice.close();
  });
});
