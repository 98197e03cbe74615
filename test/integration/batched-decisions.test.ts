// Decisions issued in the same tick travel as one batched script call (src/redis/scripts.ts): the
// answers are exactly those of separate calls made one after the other, in issue order.
import { describe, expect, it } from 'vitest';
import { modelFor, parsePolicy, type PolicyInput, type Sluice } from '../../src/index.js';
import { useBackend } from '../helpers/fixtures.js';
import { scriptCallsIn } from '../helpers/script-calls.js';
import { loadScripts } from '../../src/redis/script-forms.js';
import { until } from '../helpers/throttle-procs.js';

const ctx = useBackend('single');

/** Script calls the server has run so far (FCALL + EVALSHA + EVAL). */
async function scriptCalls(): Promise<number> {
  return scriptCallsIn(await ctx.backend.raw.info('commandstats'));
}

const POLICIES: [string, PolicyInput][] = [
  ['fixed-window', { algorithm: 'fixed-window', limit: 7, windowMs: 1_000 }],
  ['sliding-log', { algorithm: 'sliding-log', limit: 7, windowMs: 1_000 }],
  ['sliding-counter', { algorithm: 'sliding-counter', limit: 7, windowMs: 1_000 }],
  ['token-bucket', { algorithm: 'token-bucket', capacity: 7, refillPerSecond: 3 }],
  ['leaky-bucket', { algorithm: 'leaky-bucket', ratePerSecond: 3, burst: 6 }],
  ['concurrency', { algorithm: 'concurrency', limit: 7, leaseMs: 1_000 }],
];

describe('batched decisions', () => {
  it.each(POLICIES)('%s: 24 calls in one tick, on two keys, answer like the model in issue order', async (_name, input) => {
    const policy = parsePolicy(input);
    const limiter = ctx.sluice.limiter(policy);
    const models = { a: modelFor(policy), b: modelFor(policy) };
    const calls = Array.from({ length: 24 }, (_, i) => ({
      key: i % 3 === 0 ? 'b' : 'a',
      nowMs: 5_000_000 + i * 37,
      cost: 1 + (i % 3),
      peek: i % 5 === 4,
    }));
    // Load the batched script first (its first use is a NOSCRIPT reply, then an EVAL); the first calls
    // of the file may also run before the connection is ready, one by one.
    for (let i = 0; i < 2; i++) await Promise.all([limiter.peek('warm'), limiter.peek('warm')]);
    const before = await scriptCalls();
    const got = await Promise.all(calls.map((c) => (c.peek ? limiter.peek(c.key, c) : limiter.limit(c.key, c))));
    const sent = (await scriptCalls()) - before;
    expect(sent).toBe(1); // one script call carried all 24 decisions
    calls.forEach((c, i) => {
      const want = models[c.key as 'a' | 'b'].decide(c.nowMs, c.cost, !c.peek);
      const { leaseId, ...rest } = got[i]!;
      const { leaseId: _m, ...wantRest } = want;
      expect(rest, `call ${i}`).toEqual(wantRest);
      expect(leaseId !== undefined).toBe(policy.algorithm === 'concurrency' && !c.peek && got[i]!.allowed);
    });
  });

  it('more calls than one batch holds are split, and still all decided in order', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'fixed-window', limit: 150, windowMs: 60_000 });
    const got = await Promise.all(Array.from({ length: 200 }, () => limiter.limit('many', { nowMs: 60_000 })));
    expect(got.map((d) => d.remaining)).toEqual(Array.from({ length: 200 }, (_, i) => Math.max(0, 149 - i)));
    expect(got.filter((d) => d.allowed)).toHaveLength(150);
  });

  it('a batch after SCRIPT FLUSH and FUNCTION FLUSH still runs (FCALL or EVALSHA falls back to EVAL)', async () => {
    const limiter = ctx.sluice.limiter({ algorithm: 'token-bucket', capacity: 10, refillPerSecond: 1 });
    await limiter.limit('flush', { nowMs: 0 });
    await Promise.all([1, 2].map(() => limiter.limit('flush', { nowMs: 0 })));
    // The batched form's library is in (loaded after its first call): the flush below takes it away.
    const batchFn = loadScripts().get('batch:token-bucket')!.fn;
    await until(async () => ((await ctx.backend.raw.call('FUNCTION', 'LIST', 'LIBRARYNAME', batchFn)) as unknown[]).length > 0, 2_000, 'the batched library loaded');
    await ctx.backend.raw.script('FLUSH');
    await ctx.backend.raw.call('FUNCTION', 'FLUSH');
    const got = await Promise.all([1, 2, 3].map(() => limiter.limit('flush', { nowMs: 0 })));
    expect(got.map((d) => [d.failure, d.remaining])).toEqual([
      [undefined, 6],
      [undefined, 5],
      [undefined, 4],
    ]);
  });
});
