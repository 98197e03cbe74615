// Redis stopped mid-run: decisions follow each policy's fail mode within its deadline and say so;
// Redis restarted: decisions resume with no manual step. Also: script cache loss (SCRIPT FLUSH, FUNCTION FLUSH).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice, type Sluice } from '../../src/index.js';
import { startBackend, uniquePrefix, type Backend } from '../helpers/fixtures.js';
import { startProxy } from '../helpers/tcp-proxy.js';

let backend: Backend;
let sluice: Sluice;
const outcomes: string[] = [];

beforeAll(async () => {
  backend = await startBackend('single');
  sluice = backend.sluice({ observer: { onDecision: (e) => outcomes.push(e.outcome) } });
});
afterAll(async () => {
  await backend?.dispose();
});

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
  return Date.now() - started;
}

describe('Redis outage', () => {
  it('fails open or closed within the deadline, counts it, then resumes by itself', async () => {
    const open = sluice.limiter({ algorithm: 'token-bucket', capacity: 10, refillPerSecond: 1, failMode: 'open', timeoutMs: 150 });
    const closed = sluice.limiter({ algorithm: 'fixed-window', limit: 10, windowMs: 60_000, failMode: 'closed', timeoutMs: 150 });
    expect((await open.limit('k')).failure).toBeUndefined();
    expect((await closed.limit('k')).failure).toBeUndefined();

    await backend.server!.stop();
    // Decisions made while it is down, right after the stop and a while later.
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const [o, c] = await Promise.all([open.limit('k'), closed.limit('k')]);
      const elapsed = performance.now() - t0;
      expect(elapsed).toBeLessThan(150 + 250); // the deadline plus a margin for a loaded machine
      expect(o).toMatchObject({ allowed: true, failure: 'fail-open' });
      expect(c).toMatchObject({ allowed: false, failure: 'fail-closed' });
      expect(c.retryAfterMs).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(outcomes.filter((o) => o === 'fail-open').length).toBeGreaterThanOrEqual(5);
    expect(outcomes.filter((o) => o === 'fail-closed').length).toBeGreaterThanOrEqual(5);

    await backend.server!.start(); // empty: the restarted server has no state and no script cache
    await until(async () => (await closed.limit('k')).failure === undefined, 5_000);
    const d = await open.limit('k');
    expect(d.failure).toBeUndefined();
    expect(d.allowed).toBe(true);
    expect(d.remaining).toBe(9); // a fresh bucket: state was lost with the server
  });

  it('a decision in flight when the connection drops is never re-sent after reconnect', async () => {
    // Through a proxy: hold the bytes of 20 decisions, cut the connection, keep Redis unreachable
    // past the deadline, then let the client reconnect. Re-sending would charge 20 calls whose
    // callers were already told "fail-closed".
    const proxy = await startProxy(backend.server!.port);
    const s = createSluice({ redis: `redis://127.0.0.1:${proxy.port}`, prefix: uniquePrefix() });
    try {
      const limiter = s.limiter({ algorithm: 'fixed-window', limit: 1000, windowMs: 3_600_000, failMode: 'closed', timeoutMs: 150 });
      expect((await limiter.limit('inflight')).remaining).toBe(999);
      proxy.hold();
      const pending = Promise.all(Array.from({ length: 20 }, () => limiter.limit('inflight')));
      await new Promise((r) => setTimeout(r, 20));
      proxy.refuse(true);
      proxy.cutAll();
      proxy.resume();
      const results = await pending;
      expect(results.every((r) => r.failure === 'fail-closed')).toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      proxy.refuse(false);
      await until(async () => (await limiter.peek('inflight')).failure === undefined, 5_000);
      await new Promise((r) => setTimeout(r, 200)); // time for any re-sent command to land
      expect((await limiter.peek('inflight')).remaining).toBe(999);
    } finally {
      await s.close();
      await proxy.close();
    }
  });
});

describe('script cache loss', () => {
  it('SCRIPT FLUSH and FUNCTION FLUSH between two decisions: the second still works (FCALL or EVALSHA falls back to EVAL)', async () => {
    const limiter = sluice.limiter({ algorithm: 'leaky-bucket', ratePerSecond: 10, burst: 4 });
    expect((await limiter.limit('flush', { nowMs: 0 })).remaining).toBe(4);
    await backend.raw.script('FLUSH');
    await backend.raw.call('FUNCTION', 'FLUSH');
    expect(await backend.raw.script('EXISTS', '0000000000000000000000000000000000000000')).toEqual([0]);
    const d = await limiter.limit('flush', { nowMs: 0 });
    expect(d.failure).toBeUndefined();
    expect(d.remaining).toBe(3);
  });
});
