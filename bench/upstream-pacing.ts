// Upstream-aware pacing (issue 11), per simulated upstream (test/helpers/sim-upstreams.ts), same run:
// sluice learning from the upstream's answers with its queue configured at twice the upstream's
// capacity; sluice at a fixed rate 20% above and 20% below the capacity (learning off); and BullMQ with
// its limiter at twice the capacity driven by its manual `worker.rateLimit(ms)` on every 429 (as its docs
// show). Each run has a learning period, then a steady window: upstream 429s in the steady window (goal 0),
// the share of the upstream's capacity used in it (goal ≥ 95%), and for the upstream whose limit halves
// mid-run, the time from the change to its last 429. A private redis-server, started and stopped here.
//   npx tsx bench/upstream-pacing.ts [--learn 10] [--steady 10] [--only github,retry-after,shopify,halving,llm]
// Prints one JSON document on stdout; progress goes to stderr.
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import { createSluice, type ThrottledJob } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { FixedWindowUpstream, LeakyBucketUpstream, RetryAfterOnlyUpstream, TokensPerWindowUpstream, type SimUpstream } from '../test/helpers/sim-upstreams.js';
import { httpHandler } from '../workers/handlers/http.js';

const { values: flags } = parseArgs({
  options: {
    learn: { type: 'string', default: '10' },
    steady: { type: 'string', default: '10' },
    only: { type: 'string', default: 'github,retry-after,shopify,halving,llm' },
  },
});
const learnMs = Number(flags.learn) * 1000;
const steadyMs = Number(flags.steady) * 1000;
const log = (msg: string) => process.stderr.write(`${msg}\n`);

interface Upstream {
  name: string;
  make: () => SimUpstream;
  /** Capacity in the queue's cost units per second (calls, or tokens for the LLM). */
  capacity: number;
  /** Cost units per job and the http handler's cost_from (the LLM queue counts tokens). */
  jobCost?: number;
  costFrom?: 'openai_usage';
  /** Something the upstream changes this long after the start. */
  change?: { atMs: number; apply(u: SimUpstream): void };
}

const UPSTREAMS: Upstream[] = [
  { name: 'github', make: () => new FixedWindowUpstream(10, 2_000), capacity: 5 },
  { name: 'retry-after', make: () => new RetryAfterOnlyUpstream(5, 1_000), capacity: 5 },
  { name: 'shopify', make: () => new LeakyBucketUpstream(40, 2), capacity: 2 },
  // Another client starts sharing the account 5 s in: the limit halves to 5 per 2 s.
  { name: 'halving', make: () => new FixedWindowUpstream(10, 2_000), capacity: 2.5, change: { atMs: 5_000, apply: (u) => (u as FixedWindowUpstream).setLimit(5) } },
  // 6,000 tokens per 6 s (1,000/s), calls of 100 tokens: the queue counts tokens.
  { name: 'llm', make: () => new TokensPerWindowUpstream(6_000, 6_000), capacity: 1_000, jobCost: 100, costFrom: 'openai_usage' },
];

interface Figures {
  refusedWhileLearning: number;
  refusedSteady: number;
  shareOfCapacity: number;
  lastRefusalAfterChangeMs?: number;
}

function figures(u: Upstream, up: SimUpstream, t0: number): Figures {
  const from = t0 + learnMs;
  const to = from + steadyMs;
  const units = u.jobCost ?? 1;
  const out: Figures = {
    refusedWhileLearning: up.refusedBetween(t0, from),
    refusedSteady: up.refusedBetween(from, to),
    shareOfCapacity: Math.round(((up.acceptedBetween(from, to) * units) / ((u.capacity * steadyMs) / 1000)) * 1000) / 1000,
  };
  if (u.change) {
    const changeAt = t0 + u.change.atMs;
    const last = up.calls.filter((c) => c.status === 429 && c.at >= changeAt).at(-1);
    out.lastRefusalAfterChangeMs = last ? last.at - changeAt : 0;
  }
  return out;
}

async function runUpstream(u: Upstream, up: SimUpstream, body: (done: Promise<void>) => Promise<() => Promise<void>>): Promise<Figures> {
  await up.start();
  const t0 = Date.now();
  let timer: NodeJS.Timeout | undefined;
  if (u.change) timer = setTimeout(() => u.change!.apply(up), u.change.atMs);
  const stop = await body(new Promise((r) => setTimeout(r, learnMs + steadyMs)));
  clearTimeout(timer);
  await stop();
  await up.close();
  return figures(u, up, t0);
}

async function sluiceRun(url: string, u: Upstream, variant: 'learn' | 'plus20' | 'minus20'): Promise<Figures> {
  const up = u.make();
  const sluice = createSluice({ redis: url, prefix: `up${Date.now()}${variant}` });
  const rate = u.capacity * (variant === 'learn' ? 2 : variant === 'plus20' ? 1.2 : 0.8);
  const cost = u.jobCost ?? 1;
  return runUpstream(u, up, async (done) => {
    const throttle = sluice.throttle('paid', { ratePerSecond: rate, capacity: 1_000_000, attempts: 20, backoff: { type: 'fixed', delayMs: 500 }, upstream: { learn: variant === 'learn' } });
    const handler = httpHandler({ url: up.url, method: 'POST', timeoutMs: 5_000, headers: {}, ...(u.costFrom ? { costFrom: u.costFrom } : {}) }, {});
    const worker = sluice.worker('paid', (job: ThrottledJob) => handler(job), { concurrency: 20 });
    await worker.waitUntilReady();
    const jobs = Math.ceil((rate * (learnMs + steadyMs)) / 1000 / cost) + 10;
    for (let i = 0; i < jobs; i++) await throttle.submit('account', cost > 1 ? { tokens: cost } : { i }, { cost });
    await done;
    return async () => {
      await worker.close();
      await sluice.close();
    };
  });
}

async function bullmqRun(port: number, u: Upstream): Promise<Figures> {
  const up = u.make();
  const connection = { host: '127.0.0.1', port };
  const name = `bq${Date.now()}`;
  const cost = u.jobCost ?? 1;
  const perSecond = Math.max(1, Math.round((u.capacity * 2) / cost));
  return runUpstream(u, up, async (done) => {
    const queue = new Queue(name, { connection });
    const worker: Worker = new Worker(
      name,
      async (job) => {
        const res = await fetch(up.url, { method: 'POST', body: JSON.stringify(job.data) });
        await res.body?.cancel();
        if (res.status === 429) {
          // BullMQ's documented way to respect an upstream's 429: rate-limit the whole worker, retry the job.
          const after = Number(res.headers.get('retry-after') ?? '1');
          await worker.rateLimit(Math.max(1, after) * 1000);
          throw Worker.RateLimitError();
        }
      },
      { connection, concurrency: 20, limiter: { max: perSecond, duration: 1000 } },
    );
    await worker.waitUntilReady();
    const jobs = Math.ceil((u.capacity * 2 * (learnMs + steadyMs)) / 1000 / cost) + 10;
    await queue.addBulk(Array.from({ length: jobs }, (_, i) => ({ name: 'j', data: cost > 1 ? { tokens: cost } : { i }, opts: { removeOnComplete: true, attempts: 1_000 } })));
    await done;
    return async () => {
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
    };
  });
}

const redis = await startRedis();
try {
  const results: Record<string, Record<string, Figures>> = {};
  for (const u of UPSTREAMS.filter((x) => flags.only.split(',').includes(x.name))) {
    results[u.name] = {};
    for (const variant of ['learn', 'plus20', 'minus20'] as const) {
      log(`${u.name}: sluice ${variant}`);
      results[u.name]![`sluice-${variant}`] = await sluiceRun(redis.url, u, variant);
    }
    log(`${u.name}: bullmq rateLimit()`);
    results[u.name]!['bullmq-manual-rateLimit'] = await bullmqRun(redis.port, u);
  }
  process.stdout.write(
    `${JSON.stringify({ bench: 'upstream-pacing', at: new Date().toISOString(), learnSeconds: learnMs / 1000, steadySeconds: steadyMs / 1000, results }, null, 2)}\n`,
  );
} finally {
  await redis.dispose();
}
