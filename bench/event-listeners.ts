// A process's job event reader with many subscribers (long-polls and SSE streams, each watching one
// job): N subscriptions on distinct jobs, then 2,000 events a second for 3 s appended from another
// connection; the process's CPU (fraction of a core) while it reads and delivers them. A private
// redis-server, started and stopped here.
//   npx tsx bench/event-listeners.ts [--subscribers 100,20000] [--reps 2]
// Prints one JSON document on stdout.
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createSluice } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({ options: { subscribers: { type: 'string', default: '100,20000' }, reps: { type: 'string', default: '2' } } });
const counts = flags.subscribers.split(',').map(Number);
const reps = Number(flags.reps);
const BATCHES = 600;
const PER_BATCH = 10;

async function run(n: number) {
  const server = await startRedis();
  const sluice = createSluice({ redis: server.url, prefix: 'ev' });
  const raw = new Redis(server.url);
  try {
    const throttle = sluice.throttle('e', { ratePerSecond: 10, capacity: 10 });
    await throttle.ready();
    let delivered = 0;
    await Promise.all(Array.from({ length: n }, (_, i) => throttle.events.subscribe(() => void delivered++, { jobId: `j${i}` })));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    for (let b = 0; b < BATCHES; b++) {
      const p = raw.pipeline();
      for (let k = 0; k < PER_BATCH; k++) p.xadd(throttle.events.key, '*', 'e', 'progress', 'j', `j${(b * PER_BATCH + k) % n}`, 'd', '{}');
      await p.exec();
      await new Promise((r) => setTimeout(r, 5));
    }
    await new Promise((r) => setTimeout(r, 200));
    const cpu = process.cpuUsage(cpu0);
    const seconds = (performance.now() - t0) / 1000;
    return { subscribers: n, events: BATCHES * PER_BATCH, delivered, seconds: Math.round(seconds * 100) / 100, processCpu: Math.round(((cpu.user + cpu.system) / 1e6 / seconds) * 1000) / 1000 };
  } finally {
    raw.disconnect();
    await sluice.close();
    await server.dispose();
  }
}

const rows = [];
for (let r = 0; r < reps; r++) for (const n of counts) rows.push(await run(n));
process.stdout.write(`${JSON.stringify({ bench: 'event-listeners', at: new Date().toISOString(), note: "the process's CPU includes the bench's own appends (the same in every row)", rows }, null, 2)}\n`);
process.exit(0);
