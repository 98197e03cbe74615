// Property test of the all-or-nothing script (lua/limits.lua): random requests, each needing two or three
// limits of random algorithms, give the same decisions and the same allowed/refused as the pure models
// do when every limit is checked first and all are charged only if all allow. Injected time, real Redis.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelFor, parsePolicy } from '../../src/index.js';
import { limitAll } from '../../src/limiters/all-or-nothing.js';
import type { Decision } from '../../src/limiters/decision.js';
import { TOPOLOGIES, useBackend } from '../helpers/fixtures.js';
import { policies } from '../helpers/policy-arbitraries.js';

const step = (maxDtMs: number) =>
  fc.record({
    dtMs: fc.oneof(fc.constant(0), fc.double({ min: 0, max: maxDtMs, noNaN: true }), fc.integer({ min: 0, max: maxDtMs })),
    cost: fc.integer({ min: 1, max: 8 }),
  });


const anyPolicy = fc.oneof(...Object.values(policies));
const withoutLease = ({ leaseId: _l, ...rest }: Decision) => rest;

let run = 0;

describe.each(TOPOLOGIES)('limits script == models checked then charged, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  it('random requests over 2 or 3 limits', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyPolicy, { minLength: 2, maxLength: 3 }), fc.array(step(3_000), { minLength: 1, maxLength: 40 }), fc.integer({ min: 0, max: 2 ** 40 }), async (inputs, steps, startMs) => {
        const policies = inputs.map((p, i) => parsePolicy({ ...p, name: `m${run}-${i}`, timeoutMs: 10_000 }));
        const limiters = policies.map((p) => ctx.sluice.limiter(p));
        const models = policies.map((p) => modelFor(p));
        // One slot for the request's keys: on a cluster they must share one to go in one script call.
        const key = `aon-${run++}`;
        let now = startMs;
        for (const s of steps) {
          now += s.dtMs;
          const costs = limiters.map((l) => Math.min(s.cost, l.maxCost));
          const got = await limitAll(limiters.map((limiter, i) => ({ limiter, key, options: { nowMs: now, cost: costs[i]!, slot: key } })));
          const checked = models.map((m, i) => m.decide(now, costs[i]!, false));
          const allowed = checked.every((d) => d.allowed);
          const want = allowed ? models.map((m, i) => m.decide(now, costs[i]!, true)) : checked;
          expect(got.allowed, `request at ${now}`).toBe(allowed);
          expect(got.decisions.map(withoutLease), `request at ${now}`).toEqual(want.map(withoutLease));
          got.decisions.forEach((d, i) => expect(d.leaseId !== undefined, 'a lease only when charged').toBe(allowed && policies[i]!.algorithm === 'concurrency'));
        }
      }),
      { numRuns: 60 },
    );
  });

  it('two limits on one key: the second charge refuses, the first is undone', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'fixed-window', limit: 3, windowMs: 60_000, name: 'aon-same' });
    const calls = [0, 1].map(() => ({ limiter, key: 'same', options: { nowMs: 1_000, cost: 2 } }));
    const r = await limitAll(calls);
    expect(r.allowed).toBe(false);
    expect(r.decisions[1]!.allowed).toBe(false);
    // Nothing charged: the whole limit is still there.
    expect((await limiter.peek('same', { nowMs: 1_000 })).remaining).toBe(3);
    const ok = await limitAll([0, 1].map(() => ({ limiter, key: 'same', options: { nowMs: 1_000, cost: 1 } })));
    expect(ok.allowed).toBe(true);
    expect((await limiter.peek('same', { nowMs: 1_000 })).remaining).toBe(1);
  });
});
