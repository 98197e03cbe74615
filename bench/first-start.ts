// How long a job submitted to an idle lane waits for its start: submit → handler start, one job at a
// time on fresh lanes (so every admission activates its lane and the dispatcher meets a head job that
// its submitter may not have added yet), with worker processes ready. The floor is the delivery time
// (10 ms) plus the admission and the add. A private redis-server, started and stopped here.
//   npx tsx bench/first-start.ts [--jobs 200] [--procs 2] [--gap-ms 20] [--burst 1]
// Prints one JSON document on stdout.
import { parseArgs } from 'node:util';
import { createSluice } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { ThrottleProc } from '../test/helpers/throttle-procs.js';

const { values: flags } = parseArgs({
  options: {
    jobs: { type: 'string', default: '200' },
    procs: { type: 'string', default: '2' },
    'gap-ms': { type: 'string', default: '20' },
    // Submits this many at once (each on its own fresh lane) before the gap: a burst of new lanes.
    burst: { type: 'string', default: '1' },
  },
});
const jobs = Number(flags.jobs);
const config = { ratePerSecond: 10, capacity: 10 };

const redis = await startRedis();
try {
  const prefix = `fs${Date.now()}`;
  const procs = await Promise.all(Array.from({ length: Number(flags.procs) }, () => ThrottleProc.start({ target: redis.url } as never, prefix, 'fs', config)));
  await Promise.all(procs.map((p) => p.worker(10)));
  const sluice = createSluice({ redis: redis.url, prefix });
  const throttle = sluice.throttle('fs', config);
  const submitted = new Map<string, number>();
  const burst = Number(flags.burst);
  for (let i = 0; i < jobs; i += burst) {
    await Promise.all(
      Array.from({ length: Math.min(burst, jobs - i) }, async (_, b) => {
        const at = performance.timeOrigin + performance.now();
        const r = await throttle.submit(`lane-${i + b}`, { i: i + b });
        if (!r.admitted) throw new Error(`refused: ${JSON.stringify(r)}`);
        submitted.set(r.jobId, at);
      }),
    );
    await new Promise((r) => setTimeout(r, Number(flags['gap-ms'])));
  }
  const deadline = Date.now() + 10_000;
  const count = () => procs.reduce((a, p) => a + p.starts.length, 0);
  while (count() < jobs && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  const waits = procs.flatMap((p) => p.starts.map((s) => s.t - submitted.get(s.id)!)).sort((a, b) => a - b);
  const q = (p: number) => Math.round(waits[Math.min(waits.length - 1, Math.floor(p * waits.length))]! * 10) / 10;
  await Promise.all(procs.map((p) => p.close()));
  await sluice.close();
  process.stdout.write(`${JSON.stringify({ bench: 'first-start', at: new Date().toISOString(), jobs, burst, started: waits.length, waitMs: { p50: q(0.5), p90: q(0.9), p99: q(0.99), max: q(1) } }, null, 2)}\n`);
} finally {
  await redis.dispose();
}
