// Something in front of Redis answers a script with the wrong shape (`+OK` instead of its array):
// every limiter and throttle call treats it as a failure (the fail mode decides, marked and counted;
// SLUICE_ERR_SCRIPT where there is no fail mode), never as a decision. Issue 8, defect 2.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice, isSluiceError, type Sluice } from '../../../src/index.js';
import type { DecisionOutcome } from '../../../src/limiters/limiter.js';
import { startRedis, type RedisServer } from '../../helpers/redis-server.js';
import { startProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';
import { uniquePrefix } from '../../helpers/fixtures.js';

let server: RedisServer;
let proxy: TcpProxy;
let sluice: Sluice;
let direct: Redis;
const seen: { outcome: DecisionOutcome; error?: unknown }[] = [];

beforeAll(async () => {
  server = await startRedis();
  proxy = await startProxy(server.port);
  direct = new Redis(server.port, '127.0.0.1');
  sluice = createSluice({
    redis: `redis://127.0.0.1:${proxy.port}`,
    prefix: uniquePrefix(),
    observer: { onDecision: (e) => seen.push({ outcome: e.outcome, ...(e.error === undefined ? {} : { error: e.error }) }) },
  });
});
afterAll(async () => {
  proxy.answerOk(false);
  await sluice?.close();
  await proxy?.close();
  direct?.disconnect();
  await server?.dispose();
});

const ALGORITHMS = [
  { algorithm: 'fixed-window', limit: 5, windowMs: 60_000 },
  { algorithm: 'sliding-log', limit: 5, windowMs: 60_000 },
  { algorithm: 'sliding-counter', limit: 5, windowMs: 60_000 },
  { algorithm: 'token-bucket', capacity: 5, refillPerSecond: 1 },
  { algorithm: 'leaky-bucket', ratePerSecond: 1, burst: 4 },
  { algorithm: 'concurrency', limit: 5, leaseMs: 60_000 },
] as const;

describe('a malformed script reply', () => {
  it('is a failure decided by the fail mode, marked and counted, for every algorithm, alone and batched', async () => {
    const limiters = ALGORITHMS.flatMap((p) => [sluice.limiter({ ...p, failMode: 'open' }), sluice.limiter({ ...p, failMode: 'closed' })]);
    // Connected, and every script (alone, batched) in Redis as a function: nothing is loaded during the test.
    for (const l of limiters) expect((await l.limit('warm')).failure).toBeUndefined();
    await Promise.all(limiters.map((l) => Promise.all([l.limit('w1'), l.limit('w2'), l.peek('w3')])));
    for (let last = -1, now = 0; now !== last; await new Promise((r) => setTimeout(r, 50))) {
      last = now;
      now = ((await direct.call('FUNCTION', 'LIST')) as unknown[]).length;
    }
    seen.length = 0;
    proxy.answerOk(true);
    // One call at a time (a single script call) and three in one tick (one batched script call).
    const alone = [];
    for (const l of limiters) alone.push(await l.limit('k'));
    const batched = (await Promise.all(limiters.map((l) => Promise.all([l.limit('a'), l.limit('b'), l.peek('c')])))).flat();
    proxy.answerOk(false);
    const all = [...alone, ...batched];
    // One script call per limit() alone; the batch is one call per script (the limiters of one algorithm share it).
    expect(proxy.okAnswers).toBe(limiters.length + ALGORITHMS.length);
    for (const [i, d] of all.entries()) {
      const open = Math.floor((i < alone.length ? i : Math.floor((i - alone.length) / 3)) % 2) === 0;
      expect(d).toMatchObject(open ? { allowed: true, failure: 'fail-open', remaining: 0 } : { allowed: false, failure: 'fail-closed', remaining: 0 });
      expect(d.retryAfterMs).toBe(open ? 0 : 1_000);
      expect(Number.isFinite(d.resetAtMs)).toBe(true);
    }
    // Counted as failures, each with SLUICE_ERR_SCRIPT naming what came back.
    expect(seen).toHaveLength(all.length);
    for (const e of seen) {
      expect(e.outcome).toMatch(/^fail-(open|closed)$/);
      expect(isSluiceError(e.error, 'SLUICE_ERR_SCRIPT')).toBe(true);
      expect((e.error as Error).message).toMatch(/answered "OK"/);
    }
  });

  it('is SLUICE_ERR_SCRIPT where a call has no fail mode: release, extend, submit, lane', async () => {
    const conc = sluice.limiter({ algorithm: 'concurrency', limit: 5, leaseMs: 60_000 });
    const lease = await conc.limit('r');
    const throttle = sluice.throttle('malformed', { ratePerSecond: 10, capacity: 10 });
    await throttle.lane('x'); // connected, configuration published
    proxy.answerOk(true);
    try {
      const settled = await Promise.allSettled([conc.release('r', lease.leaseId!), conc.extend('r', lease.leaseId!), throttle.submit('x', { n: 1 }), throttle.lane('x')]);
      for (const s of settled) {
        expect(s.status).toBe('rejected');
        expect(isSluiceError((s as PromiseRejectedResult).reason, 'SLUICE_ERR_SCRIPT')).toBe(true);
      }
    } finally {
      proxy.answerOk(false);
    }
  });
});
