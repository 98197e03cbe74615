// Pacing where the call leaves (issue 11, item 3), end to end: an upstream that enforces a strict
// sliding window of 20 calls per second, a queue configured at exactly that (a global cap of 20/s over
// four keys), two worker processes whose handlers take a random 0–25 ms to prepare each call before
// sending it, and a send headroom of 20 ms. Calls that would leave more than 20 ms after their start go
// back to their lane and leave on a later start; the others leave within the headroom, which the
// starts' spacing absorbs. Measured at the upstream, by its own arrival times: no call refused, never
// more than 20 in any 1 s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { RetryAfterOnlyUpstream } from '../../helpers/sim-upstreams.js';
import { maxInWindow } from '../../helpers/throttle-stats.js';
import { ThrottleProc, until } from '../../helpers/throttle-procs.js';

let backend: Backend;
beforeAll(async () => {
  backend = await startBackend('single');
});
afterAll(async () => {
  await backend?.dispose();
});

describe('calls held to the rate where they leave', () => {
  it('an upstream with a strict 1 s window at the queue rate refuses nothing, and never sees more than its limit', async () => {
    // Its own upstream and processes: a retry of this test starts from nothing.
    const upstream = await new RetryAfterOnlyUpstream(20, 1_000).start();
    const procs: ThrottleProc[] = [];
    try {
      await run(upstream, procs);
    } finally {
      await Promise.all(procs.map((p) => p.close()));
      await upstream.close();
    }
  });
});

async function run(upstream: RetryAfterOnlyUpstream, procs: ThrottleProc[]): Promise<void> {
  const config = { ratePerSecond: 10, capacity: 100, globalRatePerSecond: 20, attempts: 1, upstream: { learn: false, sendHeadroomMs: 20 } };
  const prefix = uniquePrefix('sh');
  for (let i = 0; i < 2; i++) procs.push(await ThrottleProc.start(backend, prefix, 'calls', config));
  await Promise.all(procs.map((p) => p.worker(5, { call: { url: upstream.url, prepareMaxMs: 25 } })));
  const items = Array.from({ length: 100 }, (_, i) => ({ key: `k${i % 4}`, payload: { i } }));
  const results = await procs[0]!.submit(items);
  expect(results.every((r) => r.admitted)).toBe(true);
  await until(() => upstream.calls.length >= 100, 30_000, 'all 100 calls');
  // A moment for a stray extra call (there must be none).
  await new Promise((r) => setTimeout(r, 300));

  expect(upstream.calls.filter((c) => c.status !== 200)).toEqual([]);
  expect(upstream.calls).toHaveLength(100);
  expect(maxInWindow(upstream.calls.map((c) => c.at).sort((a, b) => a - b), 1_000)).toBeLessThanOrEqual(20);
  // Some calls would have left too late and went back first: more starts than calls.
  const starts = procs.reduce((n, p) => n + p.starts.length, 0);
  expect(starts).toBeGreaterThan(100);
}
