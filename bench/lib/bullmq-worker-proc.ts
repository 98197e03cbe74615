// A bare BullMQ worker in its own process, for bench/start-cost.ts: the peer a throttle's worker is
// compared with. Its handler returns at once; BullMQ's own limiter paces it.
// argv: <redis port> <queue name> <rate per second> <concurrency>
// stdin {"cmd":"count"} -> stdout {"type":"count","n":<jobs completed so far>}; {"cmd":"close"} -> exits.
import { createInterface } from 'node:readline';
import { Worker } from 'bullmq';

const [port, name, rate, concurrency] = process.argv.slice(2);
let completed = 0;
const worker = new Worker(name!, async () => undefined, {
  connection: { host: '127.0.0.1', port: Number(port) },
  concurrency: Number(concurrency),
  limiter: { max: Number(rate), duration: 1000 },
  // sluice's default retention (throttle config keepCompleted), so both keep the same completed set.
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
});
worker.on('completed', () => void completed++);
await worker.waitUntilReady();
process.stdout.write(JSON.stringify({ type: 'ready' }) + '\n');
for await (const line of createInterface({ input: process.stdin })) {
  const { cmd } = JSON.parse(line) as { cmd: string };
  if (cmd === 'count') process.stdout.write(JSON.stringify({ type: 'count', n: completed }) + '\n');
  if (cmd === 'close') {
    await worker.close();
    process.exit(0);
  }
}
