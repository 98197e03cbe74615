// Learning the upstream's limit, wired end to end on one process: the simulated upstreams answer as
// their real counterparts do (exact statuses and headers), the shipped `http` handler reports their
// headers after each call, and `job.upstream()` of a module handler writes the learned interval the
// dispatcher reads (lane or queue scope), or nothing when learning is off.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Sluice, ThrottledJob, ThrottleWorker } from '../../../src/index.js';
import { httpHandler } from '../../../workers/handlers/http.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { FixedWindowUpstream, GraphqlCostUpstream, LeakyBucketUpstream, RetryAfterOnlyUpstream, TokensPerWindowUpstream, type SimUpstream } from '../../helpers/sim-upstreams.js';
import { until } from '../../helpers/throttle-procs.js';

let backend: Backend;
beforeAll(async () => {
  backend = await startBackend('single');
});
afterAll(async () => {
  await backend?.dispose();
});
const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((o) => o.close()));
});

async function sim<T extends SimUpstream>(upstream: T): Promise<T> {
  await upstream.start();
  open.push(upstream);
  return upstream;
}

async function statuses(upstream: SimUpstream, n: number): Promise<{ status: number; headers: Headers }[]> {
  const out = [];
  for (let i = 0; i < n; i++) {
    const r = await fetch(upstream.url, { method: 'POST', body: '{}' });
    await r.text();
    out.push({ status: r.status, headers: r.headers });
  }
  return out;
}

describe('the simulated upstreams', () => {
  it('GitHub-like: a fixed window with X-RateLimit-* on every answer, 429 past the limit', async () => {
    const up = await sim(new FixedWindowUpstream(3, 60_000));
    const got = await statuses(up, 4);
    expect(got.map((g) => g.status)).toEqual([200, 200, 200, 429]);
    expect(got.map((g) => g.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0', '0']);
    expect(Number(got[0]!.headers.get('x-ratelimit-reset')) * 1000).toBeGreaterThan(Date.now() + 59_000);
    expect(up.refusedSince(0)).toBe(1);
  });

  it('429 + Retry-After only: a strict sliding window; refused calls do not count', async () => {
    const up = await sim(new RetryAfterOnlyUpstream(2, 60_000));
    const got = await statuses(up, 4);
    expect(got.map((g) => [g.status, g.headers.get('retry-after'), g.headers.get('x-ratelimit-remaining')])).toEqual([
      [200, null, null],
      [200, null, null],
      [429, '60', null],
      [429, '60', null],
    ]);
    expect(up.refusedSince(0)).toBe(2);
  });

  it('Shopify-like: a leaky bucket reporting its level, 429 + Retry-After: 1.0 when a call does not fit', async () => {
    const up = await sim(new LeakyBucketUpstream(3, 0.001));
    const got = await statuses(up, 4);
    expect(got.map((g) => [g.status, g.headers.get('x-shopify-shop-api-call-limit'), g.headers.get('retry-after')])).toEqual([
      [200, '1/3', null],
      [200, '2/3', null],
      [200, '3/3', null],
      [429, '3/3', '1.0'],
    ]);
  });
});

describe('reports reach the learned interval', () => {
  let sluice: Sluice;
  let worker: ThrottleWorker | undefined;
  // A fresh prefix per test (and per retry): learned state never carries over.
  beforeEach(() => {
    sluice = backend.sluice({ prefix: uniquePrefix() });
  });
  afterEach(async () => {
    await worker?.close();
    worker = undefined;
  });

  const fields = async (key: string) => {
    const [ui, ue, um, p] = await backend.raw.hmget(key, 'ui', 'ue', 'um', 'p');
    return { ui: Number(ui ?? 0), ue: Number(ue ?? 0), um: Number(um ?? 0), p: Number(p ?? 0) };
  };

  it('http handler, a 429 without headers: the lane halves its rate (AIMD) and is held for the Retry-After; the job is deferred, no attempt used', async () => {
    const up = await sim(new RetryAfterOnlyUpstream(0, 60_000)); // refuses everything: Retry-After 60
    const t = sluice.throttle('aimd', { ratePerSecond: 10, capacity: 10 });
    const handler = httpHandler({ url: up.url, method: 'POST', timeoutMs: 2_000, headers: {} }, {});
    worker = sluice.worker('aimd', handler);
    await worker.waitUntilReady();
    const before = Date.now();
    const r = await t.submit('k', { n: 1 });
    expect(r.admitted).toBe(true);
    const lane = t.keys.lane(t.keys.laneId('k'));
    await until(async () => (await fields(lane)).ui > 0, 5_000, 'learned interval');
    const f = await fields(lane);
    expect({ ui: f.ui, um: f.um }).toEqual({ ui: 200_000, um: 100_000 }); // 10/s -> 5/s, the 429 drawn at 10/s
    expect(f.ue).toBeGreaterThanOrEqual((before + 60_000) * 1000 - 1_000_000);
    expect(f.p).toBeGreaterThanOrEqual((before + 59_000) * 1000); // held for the Retry-After
    expect(up.calls.length).toBe(1);
    const job = await t.job(r.admitted ? r.jobId : '');
    expect(job?.attemptsMade ?? 0).toBe(0);
  });

  it('http handler, GraphQL cost: the actual cost replaces the estimate in the lane meter (a refund here)', async () => {
    const up = await sim(new GraphqlCostUpstream(1_000, 50));
    // Points: the queue's rate is the bucket's restore rate, a job's cost its estimated query cost.
    const t = sluice.throttle('gql', { ratePerSecond: 50, capacity: 100 });
    const handler = httpHandler({ url: up.url, method: 'POST', timeoutMs: 2_000, headers: {}, costFrom: 'graphql' }, {});
    let slotMs = 0;
    worker = sluice.worker('gql', async (job: ThrottledJob) => {
      slotMs = job.slotMs;
      return handler(job);
    });
    await worker.waitUntilReady();
    const r = await t.submit('k', { requested: 40, actual: 12 }, { cost: 40 });
    expect(r.admitted).toBe(true);
    await until(async () => (await t.job(r.admitted ? r.jobId : ''))?.state === 'completed', 5_000, 'the job');
    const [c] = await backend.raw.hmget(t.keys.lane(t.keys.laneId('k')), 'c');
    // 40 points admitted (0.8 s at 50/s), 12 used: the meter ends 12 points (x 1.01) after the start.
    expect(Number(c)).toBe(Math.round(slotMs * 1000) + Math.floor(12 * 20_000 * 1.01));
  });

  it('http handler, LLM tokens: usage.total_tokens replaces the estimate, the tokens budget paces; a calls-counting queue reads no cost', async () => {
    const up = await sim(new TokensPerWindowUpstream(6_000, 6_000)); // 1,000 tokens/s
    const t = sluice.throttle('llm', { ratePerSecond: 1_000, capacity: 10_000 });
    const handler = httpHandler({ url: up.url, method: 'POST', timeoutMs: 2_000, headers: {}, costFrom: 'openai_usage' }, {});
    let slotMs = 0;
    const reports: unknown[] = [];
    worker = sluice.worker('llm', async (job: ThrottledJob) => {
      slotMs = job.slotMs;
      const report = job.upstream.bind(job);
      return handler({ ...job, upstream: async (r, scope) => (reports.push(r), report(r, scope)) });
    });
    await worker.waitUntilReady();
    const r = await t.submit('k', { tokens: 150 }, { cost: 400 });
    await until(async () => (await t.job(r.admitted ? r.jobId : ''))?.state === 'completed', 5_000, 'the job');
    expect(reports).toEqual([expect.objectContaining({ cost: 150, limit: 6_000, remaining: 5_850, throttled: false })]);
    const [c] = await backend.raw.hmget(t.keys.lane(t.keys.laneId('k')), 'c');
    // 400 tokens admitted, 150 used: the meter ends 150 tokens (1 ms each, x 1.01) after the start.
    expect(Number(c)).toBe(Math.round(slotMs * 1000) + Math.floor(150 * 1_000 * 1.01));

    // The same upstream behind a queue that counts calls: no cost read, the requests budget only.
    reports.length = 0;
    await worker.close();
    const calls = sluice.throttle('llm-calls', { ratePerSecond: 10, capacity: 10 });
    const plain = httpHandler({ url: up.url, method: 'POST', timeoutMs: 2_000, headers: {} }, {});
    worker = sluice.worker('llm-calls', async (job: ThrottledJob) => {
      const report = job.upstream.bind(job);
      return plain({ ...job, upstream: async (r, scope) => (reports.push(r), report(r, scope)) });
    });
    await worker.waitUntilReady();
    const one = await calls.submit('k', { tokens: 150 });
    await until(async () => (await calls.job(one.admitted ? one.jobId : ''))?.state === 'completed', 5_000, 'the job');
    expect(reports).toHaveLength(1);
    expect(reports[0]).not.toHaveProperty('cost');
    expect(reports[0]).toMatchObject({ remaining: 99_999 });
  });

  it('http handler, GraphQL query refused for its cost: deferred until the points are back, no attempt used', async () => {
    // Another client left 10 of 100 points; they restore at 50/s.
    const up = await sim(new GraphqlCostUpstream(100, 50, 10));
    const t = sluice.throttle('gql-throttled', { ratePerSecond: 50, capacity: 500 });
    worker = sluice.worker('gql-throttled', httpHandler({ url: up.url, method: 'POST', timeoutMs: 2_000, headers: {} }, {}));
    await worker.waitUntilReady();
    const r = await t.submit('k', { requested: 60, actual: 60 }, { cost: 60 });
    await until(async () => (await t.job(r.admitted ? r.jobId : ''))?.state === 'completed', 5_000, 'the job, after the wait');
    const calls = up.calls;
    expect(calls.map((c) => c.status)).toEqual([429, 200]);
    // Refused with 10 points there: (60 - 10) / 50 = 1 s until they are back; the job waited that (the
    // bucket took the second call) and not much longer.
    expect(calls[1]!.at - calls[0]!.at).toBeGreaterThanOrEqual(1_000 - 20);
    expect(calls[1]!.at - calls[0]!.at).toBeLessThan(1_000 + 300);
    expect((await t.job(r.admitted ? r.jobId : ''))?.attemptsMade).toBe(1);
  });

  it('http handler, X-RateLimit-* budget: the lane paces at reset / remaining, never faster than configured', async () => {
    const up = await sim(new FixedWindowUpstream(10, 2_000));
    const t = sluice.throttle('budget', { ratePerSecond: 10, capacity: 10 });
    worker = sluice.worker('budget', httpHandler({ url: up.url, method: 'POST', timeoutMs: 2_000, headers: {} }, {}));
    await worker.waitUntilReady();
    await t.submit('k', { n: 1 });
    await t.submit('k', { n: 2 });
    const lane = t.keys.lane(t.keys.laneId('k'));
    await until(async () => (await fields(lane)).ui > 0, 5_000, 'learned interval');
    const f = await fields(lane);
    // 9 or 8 calls left for at most 2 s: at most 250 ms apart, never below the configured 100 ms.
    expect(f.ui).toBeGreaterThanOrEqual(100_000);
    expect(f.ui).toBeLessThanOrEqual(250_000);
    expect(f.um).toBe(0);
  });

  it('module handler, queue scope under a global cap: the global hash gets the budget; learn: false writes nothing', async () => {
    const reports: unknown[] = [];
    const q = sluice.throttle('mod', { ratePerSecond: 10, capacity: 10, globalRatePerSecond: 20 });
    worker = sluice.worker('mod', async (job: ThrottledJob) => void reports.push(await job.upstream({ limit: 10, remaining: 4, resetMs: 1_000 })));
    await worker.waitUntilReady();
    await q.submit('k', {});
    await until(() => reports.length === 1, 5_000, 'report');
    expect(reports[0]).toMatchObject({ event: 'budget', scope: 'queue', result: { written: true, ui: 250_000, um: 0 } });
    expect((await fields(q.keys.global)).ui).toBe(250_000);
    await worker.close();

    const off = sluice.throttle('off', { ratePerSecond: 10, capacity: 10, upstream: { learn: false } });
    worker = sluice.worker('off', async (job: ThrottledJob) => void reports.push(await job.upstream({ remaining: 0, resetMs: 5_000 }, 'lane')));
    await worker.waitUntilReady();
    await off.submit('k', {});
    await until(() => reports.length === 2, 5_000, 'report');
    expect(reports[1]).toEqual({ event: 'ignored', scope: 'lane' });
    expect(await fields(off.keys.lane(off.keys.laneId('k')))).toMatchObject({ ui: 0, ue: 0, p: 0 });
  });

  it('module handler, a used-up budget holds the lane until the reset', async () => {
    const q = sluice.throttle('used', { ratePerSecond: 10, capacity: 10 });
    const reports: unknown[] = [];
    worker = sluice.worker('used', async (job: ThrottledJob) => void reports.push(await job.upstream({ remaining: 0, resetMs: 3_000 })));
    await worker.waitUntilReady();
    await q.submit('k', {});
    await until(() => reports.length === 1, 5_000, 'report');
    expect(reports[0]).toMatchObject({ event: 'budget', scope: 'lane', result: { written: true, ui: 3_000_000 }, pausedMs: 3_000 });
    const f = await fields(q.keys.lane(q.keys.laneId('k')));
    expect(f.p - f.ue).toBeLessThan(50_000); // the pause ends with the budget's reset (two script calls apart)
  });
});
