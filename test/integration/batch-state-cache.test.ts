// Property test of a batch's state cache (lua/includes/state-cache.lua): the batched forms read each
// string state once and write each changed one once, at the batch's end. Random batches of calls on a
// few keys, each call at its own injected time (a batch may cross a window, so an expiry set by a
// later call must win over one kept), through the batched form on one copy of the keys and one by one
// through the plain script on another: the same replies, the same values and the same expiries.
// Both the one-key decision scripts (batch:<algorithm>) and the all-or-nothing one (batch:limits,
// with two limits on one key in some requests: the path that writes keys itself). Real Redis.
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { parsePolicy, type Limiter, type PolicyInput } from '../../src/index.js';
import type { PreparedCall } from '../../src/limiters/limiter.js';
import { loadScripts } from '../../src/redis/script-forms.js';
import { useBackend } from '../helpers/fixtures.js';
import { policies } from '../helpers/policy-arbitraries.js';

/** The algorithms whose state is one string value: the ones the cache holds. */
const STRING_STATE = ['fixed-window', 'sliding-counter', 'token-bucket', 'leaky-bucket'] as const;

const callArb = fc.record({
  /** Which of the keys. */
  key: fc.nat({ max: 2 }),
  /** ms after the previous call: 0 (one instant, as under Redis TIME) or up to a few windows, in whole ms or not. */
  dtMs: fc.oneof(fc.constant(0), fc.constant(0), fc.integer({ min: 0, max: 4_000 }), fc.double({ min: 0, max: 4_000, noNaN: true })),
  cost: fc.integer({ min: 1, max: 8 }),
  record: fc.constantFrom(true, true, true, false),
});
const batchesArb = fc.array(fc.array(callArb, { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 });

/** Value and absolute expiry (ms; -1 none, -2 absent) of each key. */
async function stateOf(raw: Redis, keys: readonly string[]): Promise<{ value: string | null; expireAtMs: number }[]> {
  const out = [];
  for (const key of keys) out.push({ value: await raw.get(key), expireAtMs: Number(await raw.call('PEXPIRETIME', key)) });
  return out;
}

async function redisMs(raw: Redis, round: (x: number) => number): Promise<number> {
  const [s, us] = await raw.time();
  return round(Number(s) * 1000 + Number(us) / 1000);
}

/**
 * The two copies' states hold the same values, and expiries that differ by no more than the time
 * between the two runs (each PX is given by a call at its own moment) and 100 ms of Redis's clock
 * (test/integration/limits-single-pass.test.ts says why; every state ttl carries a 1 s margin, so a
 * wrong one is off by a window or that second).
 */
function expectSameState(one: Awaited<ReturnType<typeof stateOf>>, batched: Awaited<ReturnType<typeof stateOf>>, elapsedMs: number, where: string): void {
  batched.forEach((s, i) => {
    const b = one[i]!;
    expect(s.value, `value ${i} ${where}`).toBe(b.value);
    if (b.expireAtMs < 0) expect(s.expireAtMs, `expiry ${i} ${where}`).toBe(b.expireAtMs);
    else {
      expect(s.expireAtMs - b.expireAtMs, `expiry ${i} ${where}`).toBeGreaterThanOrEqual(-100 - elapsedMs);
      expect(s.expireAtMs - b.expireAtMs, `expiry ${i} ${where}`).toBeLessThanOrEqual(elapsedMs + 100);
    }
  });
}

let run = 0;

describe('a batch reads and writes each string state once, as its calls one by one would leave it', () => {
  const ctx = useBackend('single');
  const scripts = loadScripts();

  it.each(STRING_STATE)('%s: batch:<script> against the plain script, call by call', async (algorithm) => {
    const raw = ctx.backend.raw as Redis;
    await fc.assert(
      fc.asyncProperty(policies[algorithm] as fc.Arbitrary<PolicyInput>, batchesArb, fc.integer({ min: 0, max: 2 ** 40 }), async (input, batches, startMs) => {
        const r = run++;
        const limiter = ctx.sluice.limiter(parsePolicy({ ...input, name: `bc${r}`, timeoutMs: 10_000 }));
        const single = scripts.get(limiter.script)!.lua;
        const batch = scripts.get(`batch:${limiter.script}`)!.lua;
        const ids = [0, 1, 2].map((i) => `k${r}-${i}`);
        let now = startMs;
        for (const calls of batches) {
          const prepared = calls.map((c) => {
            now += c.dtMs;
            const p = limiter.prepare(ids[c.key]!, { nowMs: now, cost: Math.min(c.cost, limiter.maxCost) }, c.record) as PreparedCall;
            return { key: p.entry.redisKey, args: [...(p.args as (string | number)[])] };
          });
          const keys = [...new Set(prepared.map((p) => p.key))];
          const t0 = await redisMs(raw, Math.floor);
          const want: unknown[] = [];
          for (const p of prepared) want.push(await raw.eval(single, 1, `one|${p.key}`, ...p.args));
          const got = await raw.eval(batch, prepared.length, ...prepared.map((p) => `many|${p.key}`), prepared[0]!.args.length, ...prepared.flatMap((p) => p.args));
          const elapsedMs = (await redisMs(raw, Math.ceil)) - t0;
          expect(got, `replies at ${now}`).toEqual(want);
          expectSameState(await stateOf(raw, keys.map((k) => `one|${k}`)), await stateOf(raw, keys.map((k) => `many|${k}`)), elapsedMs, `at ${now}`);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('batch:limits: requests over shared and per-caller limits, some with two limits on one key', async () => {
    const raw = ctx.backend.raw as Redis;
    const single = scripts.get('limits')!.lua;
    const batch = scripts.get('batch:limits')!.lua;
    const stringPolicy = fc.oneof(...STRING_STATE.map((a) => policies[a] as fc.Arbitrary<PolicyInput>));
    await fc.assert(
      fc.asyncProperty(fc.array(stringPolicy, { minLength: 2, maxLength: 3 }), fc.boolean(), batchesArb, fc.integer({ min: 0, max: 2 ** 40 }), async (inputs, twoOnOne, batches, startMs) => {
        const r = run++;
        // Limit 0 is shared by every caller (a route's), the others are per caller; with twoOnOne the
        // last limit is the first one again: two limits on one key.
        const limiters: Limiter[] = inputs.map((input, i) => ctx.sluice.limiter(parsePolicy({ ...input, name: `bl${r}-${i}`, timeoutMs: 10_000 })));
        if (twoOnOne) limiters.push(limiters[limiters.length - 1]!);
        let now = startMs;
        for (const calls of batches) {
          const requests = calls.map((c) => {
            now += c.dtMs;
            const parts = limiters.map((l, i) => l.prepare(i === 0 ? 'route' : `caller${r}-${c.key}`, { nowMs: now, cost: Math.min(c.cost, l.maxCost) }, true) as PreparedCall);
            const args: (string | number)[] = [];
            parts.forEach((p, i) => args.push(limiters[i]!.script, ...(p.args as (string | number)[])));
            return { keys: parts.map((p) => p.entry.redisKey), args };
          });
          const keys = [...new Set(requests.flatMap((q) => q.keys))];
          const t0 = await redisMs(raw, Math.floor);
          const want: unknown[] = [];
          for (const q of requests) want.push(await raw.eval(single, q.keys.length, ...q.keys.map((k) => `one|${k}`), ...q.args));
          const got = await raw.eval(
            batch,
            requests.reduce((n, q) => n + q.keys.length, 0),
            ...requests.flatMap((q) => q.keys.map((k) => `many|${k}`)),
            requests.length,
            ...requests.map((q) => q.keys.length),
            ...requests.flatMap((q) => q.args),
          );
          const elapsedMs = (await redisMs(raw, Math.ceil)) - t0;
          expect(got, `replies at ${now}`).toEqual(want);
          expectSameState(await stateOf(raw, keys.map((k) => `one|${k}`)), await stateOf(raw, keys.map((k) => `many|${k}`)), elapsedMs, `at ${now}`);
        }
      }),
      { numRuns: 60 },
    );
  });
});
