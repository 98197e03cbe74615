// How late BullMQ delivers a delayed job to an idle or busy worker: the reason the throttle asks for
// jobs fetchAheadMs early and holds them in the worker (docs/decisions/throttle-lanes.md).
// Run: npx tsx bench/bullmq-delay-latency.ts   (own redis-server on a free port; JSON on stdout)
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis-server.js';

const JOBS = 80;
const SPACING_MS = 50;

async function measure(port: number, holdMs: number): Promise<Record<string, number>> {
  const clients: Redis[] = [];
  const conn = () => {
    const c = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: null });
    clients.push(c);
    return c;
  };
  const name = `probe${holdMs}`;
  const queue = new Queue(name, { connection: conn() });
  const late: number[] = [];
  const make = () =>
    new Worker(
      name,
      async (job) => {
        late.push(Date.now() - (job.timestamp + (job.opts.delay ?? 0)));
        await new Promise((r) => setTimeout(r, holdMs));
      },
      { connection: conn(), concurrency: 10 },
    );
  const workers = [make(), make()];
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  for (let i = 0; i < JOBS; i++) await queue.add('x', {}, { delay: 100 + i * SPACING_MS });
  const deadline = Date.now() + 100 + JOBS * SPACING_MS + 3_000;
  while (late.length < JOBS && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  await Promise.all(workers.map((w) => w.close()));
  await queue.obliterate({ force: true });
  await queue.close();
  for (const c of clients) c.disconnect();
  late.sort((a, b) => a - b);
  const q = (p: number) => late[Math.min(late.length - 1, Math.floor(late.length * p))]!;
  return { jobs: late.length, holdMs, p50Ms: q(0.5), p90Ms: q(0.9), p99Ms: q(0.99), maxMs: late.at(-1)! };
}

const server = await startRedis();
try {
  const results = [];
  for (const hold of [0, 45]) results.push(await measure(server.port, hold));
  process.stdout.write(JSON.stringify({ bench: 'bullmq-delay-latency', bullmq: '6.7.0', spacingMs: SPACING_MS, workers: 2, concurrency: 10, results }) + '\n');
} finally {
  await server.dispose();
}
