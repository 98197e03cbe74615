// A queue configured 2x faster than its upstream allows learns the upstream's real limit from its
// answers and, after a learning period, gets no further 429 while using most of the upstream's
// capacity: against a GitHub-like fixed window (X-RateLimit-*), an upstream that only answers 429 +
// Retry-After, and a Shopify-like leaky bucket. The simulated servers count every 429 exactly.
//
// The GitHub-like cases hold through the pauses at a used-up budget; the other two through the
// dispatcher pacing by the learned interval (the `ui`/`ue` fields upstream-learn.lua writes).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThrottleWorker } from '../../../src/index.js';
import { httpHandler } from '../../../workers/handlers/http.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { FixedWindowUpstream, LeakyBucketUpstream, RetryAfterOnlyUpstream, type SimUpstream } from '../../helpers/sim-upstreams.js';


interface Case {
  name: string;
  upstream: () => SimUpstream;
  /** The queue's configured rate: twice the upstream's capacity. */
  rate: number;
  learnMs: number;
  steadyMs: number;
  /** The least share of the upstream's capacity used in the steady window. */
  minShare: number;
  /** Keys sharing the one upstream account under a global cap (queue scope); default one key, lane scope. */
  keys?: number;
  /** Something the upstream changes this long after the start (before the steady window). */
  change?: { atMs: number; apply(upstream: SimUpstream): void };
}

const CASES: Case[] = [
  // 10 calls per 2 s window (GitHub's 5,000 per hour, scaled): 5/s; the queue is set to 10/s.
  { name: 'GitHub-like fixed window, X-RateLimit-*', upstream: () => new FixedWindowUpstream(10, 2_000), rate: 10, learnMs: 4_000, steadyMs: 10_000, minShare: 0.8 },
  // The same account shared by 3 keys under a global cap of 10/s: queue scope (the global hash).
  { name: 'GitHub-like fixed window shared by 3 keys, queue scope', upstream: () => new FixedWindowUpstream(10, 2_000), rate: 10, learnMs: 4_000, steadyMs: 10_000, minShare: 0.8, keys: 3 },
  // Another client starts sharing the account 6 s in: the limit halves to 5 per 2 s (2.5/s), mid-window.
  // Within 2 windows (by 10 s) the queue is at the new limit: no 429 after, most of it used.
  {
    name: 'GitHub-like fixed window whose limit halves mid-run',
    upstream: () => new FixedWindowUpstream(10, 2_000),
    rate: 10,
    learnMs: 10_000,
    steadyMs: 10_000,
    minShare: 0.8,
    change: { atMs: 6_000, apply: (u) => (u as FixedWindowUpstream).setLimit(5) },
  },
  // 5 calls in any 1 s, says nothing until it refuses (Retry-After: 1): AIMD.
  { name: '429 + Retry-After only', upstream: () => new RetryAfterOnlyUpstream(5, 1_000), rate: 10, learnMs: 20_000, steadyMs: 10_000, minShare: 0.85 },
  // Shopify's REST bucket: 40 points leaking 2/s; the queue is set to 4/s. Unpaced it would fill the
  // bucket after ~20 s (and a full bucket holds the queue for the 20 s it takes to drain): the steady
  // window covers that instant, and no answer in it may report a full bucket.
  { name: 'Shopify-like leaky bucket', upstream: () => new LeakyBucketUpstream(40, 2), rate: 4, learnMs: 12_000, steadyMs: 12_000, minShare: 0.9 },
];

// The cases run at once (each its own prefix, throttle, worker and simulated upstream; at 4-10 calls/s each
// they hardly load the machine): one after another they took 100 s of CI.
describe.concurrent('a queue 2x too fast learns its upstream: no 429 after learning, most of the capacity used', () => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await startBackend('single');
  });
  afterAll(async () => {
    await backend?.dispose();
  });

  for (const c of CASES) {
    it(c.name, async () => {
      const upstream = await c.upstream().start();
      const sluice = backend.sluice({ prefix: uniquePrefix() });
      let worker: ThrottleWorker | undefined;
      try {
        const name = 'paid';
        const keys = c.keys ?? 1;
        const shared = keys > 1 ? { globalRatePerSecond: c.rate } : {};
        const throttle = sluice.throttle(name, { ratePerSecond: c.rate, capacity: 10_000, attempts: 10, backoff: { type: 'fixed', delayMs: 500 }, ...shared });
        expect(throttle.upstream.scope).toBe(keys > 1 ? 'queue' : 'lane');
        worker = sluice.worker(name, httpHandler({ url: upstream.url, method: 'POST', timeoutMs: 2_000, headers: {} }, {}));
        await worker.waitUntilReady();
        const jobs = Math.ceil((c.rate * (c.learnMs + c.steadyMs)) / 1000);
        const t0 = Date.now();
        for (let i = 0; i < jobs; i++) expect((await throttle.submit(`key${i % keys}`, { i })).admitted).toBe(true);
        const from = t0 + c.learnMs;
        const to = from + c.steadyMs;
        if (c.change) {
          await new Promise((r) => setTimeout(r, t0 + c.change!.atMs - Date.now()));
          c.change.apply(upstream);
        }
        await new Promise((r) => setTimeout(r, to - Date.now()));

        const learning = upstream.refusedBetween(t0, from);
        const refused = upstream.refusedBetween(from, to);
        const share = upstream.acceptedBetween(from, to) / ((upstream.capacityPerSecond * c.steadyMs) / 1000);
        const detail = `${learning} 429s while learning, ${refused} after; ${(share * 100).toFixed(1)}% of capacity`;
        expect(refused, detail).toBe(0);
        expect(share, detail).toBeGreaterThanOrEqual(c.minShare);
        if (upstream instanceof LeakyBucketUpstream) expect(upstream.fullAt.filter((at) => at >= from && at < to), detail).toEqual([]);
      } finally {
        await worker?.close();
        await upstream.close();
      }
    }, 90_000);
  }
});
