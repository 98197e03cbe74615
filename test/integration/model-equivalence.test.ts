// Property tests: random sequences of (time step, cost, peek) give identical decisions — allowed,
// remaining, retryAfterMs, resetAtMs — from each Lua script on real Redis and its TypeScript model.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { modelFor, parsePolicy } from '../../src/index.js';
import { ConcurrencyModel } from '../../src/limiters/concurrency.model.js';
import { TOPOLOGIES, useBackend } from '../helpers/fixtures.js';
import { policies } from '../helpers/policy-arbitraries.js';

/** One step: advance the clock by `dtMs` (sub-ms steps included), then call with `cost`, or peek. */
const step = (maxCost: number, maxDtMs: number) =>
  fc.record({
    dtMs: fc.oneof(fc.constant(0), fc.double({ min: 0, max: maxDtMs, noNaN: true }), fc.integer({ min: 0, max: maxDtMs })),
    cost: fc.integer({ min: 1, max: maxCost }),
    peek: fc.boolean().map((b) => b && Math.random() < 0.3),
  });


let run = 0;

describe.each(TOPOLOGIES)('script == model on random sequences, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  for (const [algorithm, policyArb] of Object.entries(policies)) {
    it(algorithm, async () => {
      await fc.assert(
        fc.asyncProperty(policyArb, fc.array(step(8, 3_000), { minLength: 1, maxLength: 40 }), fc.integer({ min: 0, max: 2 ** 40 }), async (input, steps, startMs) => {
          // A generous deadline: this test is about arithmetic, not about a loaded machine's latency.
          const policy = parsePolicy({ ...input, timeoutMs: 10_000 });
          const limiter = ctx.sluice.limiter(policy);
          const model = modelFor(policy);
          const key = `prop-${run++}`;
          let now = startMs;
          for (const s of steps) {
            now += s.dtMs;
            const cost = Math.min(s.cost, limiter.maxCost);
            const got = s.peek ? await limiter.peek(key, { nowMs: now, cost }) : await limiter.limit(key, { nowMs: now, cost });
            const want = model.decide(now, cost, !s.peek);
            const { leaseId, ...gotRest } = got;
            const { leaseId: _m, ...wantRest } = want;
            expect(gotRest, `step at ${now} cost ${cost}${s.peek ? ' (peek)' : ''}`).toEqual(wantRest);
            expect(leaseId !== undefined).toBe(algorithm === 'concurrency' && !s.peek && got.allowed);
          }
        }),
        { numRuns: 40 },
      );
    });
  }

  it('concurrency with releases', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.record({ dtMs: fc.integer({ min: 0, max: 400 }), cost: fc.integer({ min: 1, max: 3 }), release: fc.nat() }), { minLength: 1, maxLength: 40 }),
        async (limit, steps) => {
          const policy = { algorithm: 'concurrency', limit, leaseMs: 1_000, timeoutMs: 10_000 } as const;
          const limiter = ctx.sluice.limiter(policy);
          const model = new ConcurrencyModel(policy);
          const key = `prop-cc-${run++}`;
          const held: { real: string; model: string }[] = [];
          let now = 1_000_000;
          for (const s of steps) {
            now += s.dtMs;
            if (held.length && s.release % 3 === 0) {
              const [lease] = held.splice(s.release % held.length, 1);
              expect(await limiter.release(key, lease!.real)).toBe(model.release(lease!.model) > 0);
              continue;
            }
            const cost = Math.min(s.cost, limit);
            const got = await limiter.limit(key, { nowMs: now, cost });
            const want = model.decide(now, cost);
            expect({ ...got, leaseId: undefined }).toEqual({ ...want, leaseId: undefined });
            if (got.allowed) held.push({ real: got.leaseId!, model: want.leaseId! });
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
