// The deny cache (src/limiters/key-cache.ts, docs/algorithms.md "Deny cache"): a key Redis refused
// until T is refused in-process until T without a Redis call. Against the reference models on random
// sequences (time steps, costs, peeks): every answer's `allowed` is the model's, so a cached refusal
// never admits over the limit and never refuses past the moment the model admits again; the answers
// Redis gave are the model's exactly (the cache left the state alone). Then: the exact resume instant
// of a fixed window and a token bucket with no Redis call in between, another cost goes to Redis,
// reset() forgets, and two middleware instances (two processes' worth) hammering one key through
// HTTP admit exactly the limit.
import express from 'express';
import fc from 'fast-check';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { modelFor, parsePolicy } from '../../src/index.js';
import { decisionMiddleware } from '../../src/express.js';
import { useBackend } from '../helpers/fixtures.js';
import { scriptCallsIn } from '../helpers/script-calls.js';
import { policyArbitraries } from '../helpers/policy-arbitraries.js';

const ctx = useBackend('single');

/** Script calls the server has run so far (FCALL + EVALSHA + EVAL). */
async function scriptCalls(): Promise<number> {
  return scriptCallsIn(await ctx.backend.raw.info('commandstats'));
}

/** A sluice whose deny-cache hits are counted. */
function counted() {
  const seen = { hits: 0 };
  const sluice = ctx.backend.sluice({ observer: { onDecision: () => undefined, onDenyCacheHit: () => void seen.hits++ } });
  return { sluice, seen };
}

// Every algorithm the deny cache serves (not concurrency), limits up to 6.
const { concurrency: _notCached, ...POLICIES } = policyArbitraries(6);

/** Mostly short steps (the cache is hit), some long ones (refusals expire), exact integers and fractions. */
const step = fc.record({
  dtMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 50 }), fc.double({ min: 0, max: 3_000, noNaN: true }), fc.integer({ min: 0, max: 3_000 })),
  cost: fc.integer({ min: 1, max: 6 }),
  peek: fc.boolean().map((b) => b && Math.random() < 0.2),
});

let run = 0;

describe('deny cache == model on random sequences', () => {
  for (const [algorithm, policyArb] of Object.entries(POLICIES)) {
    it(algorithm, async () => {
      const { sluice, seen } = counted();
      let totalHits = 0;
      await fc.assert(
        fc.asyncProperty(policyArb, fc.array(step, { minLength: 1, maxLength: 50 }), fc.integer({ min: 0, max: 2 ** 40 }), async (input, steps, startMs) => {
          const policy = parsePolicy({ ...input, timeoutMs: 10_000 });
          const limiter = sluice.limiter(policy, { denyCache: true });
          const model = modelFor(policy);
          const key = `dc-${run++}`;
          let now = startMs;
          for (const s of steps) {
            now += s.dtMs;
            const cost = Math.min(s.cost, limiter.maxCost);
            const hitsBefore = seen.hits;
            const got = s.peek ? await limiter.peek(key, { nowMs: now, cost }) : await limiter.limit(key, { nowMs: now, cost });
            const want = model.decide(now, cost, !s.peek);
            const at = `step at ${now} cost ${cost}${s.peek ? ' (peek)' : ''}`;
            if (seen.hits > hitsBefore) {
              // From the cache: a refusal, as the model says, with the same wait (to the ms rounding).
              expect(want.allowed, at).toBe(false);
              expect(got.allowed, at).toBe(false);
              expect(Math.abs(got.retryAfterMs - want.retryAfterMs), at).toBeLessThanOrEqual(1);
            } else {
              expect(got, at).toEqual(want);
            }
          }
        }),
        { numRuns: 30, seed: 1130 + run },
      );
      totalHits += seen.hits;
      // The generated sequences do hit the cache (a sliding log that records refusals never does).
      expect(totalHits).toBeGreaterThan(0);
    });
  }
});

describe('deny cache', () => {
  it('fixed window: refused from memory until the window ends, then Redis admits at exactly that instant', async () => {
    const { sluice, seen } = counted();
    const limiter = sluice.limiter({ algorithm: 'fixed-window', limit: 3, windowMs: 10_000 }, { denyCache: true });
    const t0 = 1_796_000_002_000; // 2 s into a 10 s window; it ends at ...010_000
    for (let i = 0; i < 3; i++) expect((await limiter.limit('k', { nowMs: t0 })).allowed).toBe(true);
    expect(await limiter.limit('k', { nowMs: t0 })).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 8_000 });
    const calls = await scriptCalls();
    for (const dt of [0, 1, 4_000, 7_999, 7_999.4]) {
      expect(await limiter.limit('k', { nowMs: t0 + dt })).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: Math.ceil(8_000 - dt) });
    }
    expect(await limiter.peek('k', { nowMs: t0 + 5_000 })).toMatchObject({ allowed: false, retryAfterMs: 3_000 });
    expect(seen.hits).toBe(6);
    expect(await scriptCalls()).toBe(calls);
    expect(await limiter.limit('k', { nowMs: t0 + 8_000 })).toMatchObject({ allowed: true, remaining: 2 });
    expect(await scriptCalls()).toBe(calls + 1);
  });

  it('token bucket: resumes at the exact refill instant (µs script), another cost goes to Redis', async () => {
    const { sluice, seen } = counted();
    // 2 tokens, one per 1,000 ms.
    const limiter = sluice.limiter({ algorithm: 'token-bucket', capacity: 2, refillPerSecond: 1 }, { denyCache: true });
    const t0 = 1_796_000_000_000;
    expect((await limiter.limit('b', { nowMs: t0, cost: 2 })).allowed).toBe(true);
    expect(await limiter.limit('b', { nowMs: t0 + 500, cost: 2 })).toMatchObject({ allowed: false, retryAfterMs: 1_500 });
    // Cost 2 is refused from memory; cost 1 (half a token short at +600) is Redis's to decide.
    expect((await limiter.limit('b', { nowMs: t0 + 600, cost: 2 })).allowed).toBe(false);
    expect(seen.hits).toBe(1);
    expect(await limiter.limit('b', { nowMs: t0 + 600, cost: 1 })).toMatchObject({ allowed: false, retryAfterMs: 400 });
    expect(seen.hits).toBe(1);
    // Now cost 1 is remembered until +1,000; cost 2 (a longer wait) is Redis's again.
    expect(await limiter.limit('b', { nowMs: t0 + 999.999, cost: 1 })).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(seen.hits).toBe(2);
    expect(await limiter.limit('b', { nowMs: t0 + 999.999, cost: 2 })).toMatchObject({ allowed: false, retryAfterMs: 1_001 });
    expect(seen.hits).toBe(2);
    expect(await limiter.limit('b', { nowMs: t0 + 1_000, cost: 1 })).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('reset() forgets the refusal at once; concurrency and a recording sliding log never use the cache', async () => {
    const { sluice, seen } = counted();
    const limiter = sluice.limiter({ algorithm: 'fixed-window', limit: 1, windowMs: 60_000 }, { denyCache: true });
    const t = 1_796_000_000_000;
    await limiter.limit('r', { nowMs: t });
    expect((await limiter.limit('r', { nowMs: t })).allowed).toBe(false);
    await limiter.reset('r');
    expect((await limiter.limit('r', { nowMs: t })).allowed).toBe(true);
    expect(seen.hits).toBe(0);
    expect(sluice.limiter({ algorithm: 'concurrency', limit: 1, leaseMs: 1_000 }, { denyCache: true }).denyCache).toBe(false);
    expect(sluice.limiter({ algorithm: 'sliding-log', limit: 1, windowMs: 1_000, recordRejected: true }, { denyCache: true }).denyCache).toBe(false);
    expect(sluice.limiter({ algorithm: 'sliding-log', limit: 1, windowMs: 1_000 }, { denyCache: true }).denyCache).toBe(true);
    expect(sluice.limiter({ algorithm: 'sliding-log', limit: 1, windowMs: 1_000 }).denyCache).toBe(false);
  });

  it('two middleware instances hammering one key over HTTP: exactly the limit admitted, the rest refused mostly from memory', async () => {
    // A bucket of 20 that refills one token per 1,000 s: nothing refills during the test.
    const policy = { name: 'dc-http', algorithm: 'token-bucket', capacity: 20, refillPerSecond: 0.001 } as const;
    const prefix = `dchttp${run++}`;
    const apps = [0, 1].map(() => {
      const app = express();
      app.use(decisionMiddleware(ctx.backend.sluice({ prefix }), { policy, identify: () => 'one-client' }));
      app.get('/x', (_req, res) => void res.send('ok'));
      return app;
    });
    const calls = await scriptCalls();
    const statuses: number[] = [];
    for (let round = 0; round < 10; round++) {
      const batch = await Promise.all(Array.from({ length: 20 }, (_, i) => request(apps[i % 2]!).get('/x')));
      for (const res of batch) {
        statuses.push(res.status);
        if (res.status === 429) expect(Number(res.headers['retry-after'])).toBeGreaterThan(990);
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(20);
    expect(statuses.filter((s) => s === 429)).toHaveLength(180);
    // Each process asks Redis until it has seen a refusal, then answers from memory.
    expect(await scriptCalls()).toBeLessThan(calls + 100);
  });
});
