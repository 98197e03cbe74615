// A deep backlog in fast lanes drained by one in-process worker: starts and hand-backs (late jobs sent
// back to their lane) per second, until all started or 30 s. Prints JSON. `npx tsx bench/late-handback.ts [lanes] [perLane] [rate] [concurrency]`
import { loadavg } from 'node:os';
import { createSluice } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';

const [lanes = 20, perLane = 100, rate = 500, concurrency = 50] = process.argv.slice(2).map(Number);
const server = await startRedis();
let starts = 0;
let backs = 0;
const sluice = createSluice({
  redis: server.url,
  prefix: 'lh',
  observer: { onDecision: () => undefined, onDefer: () => void backs++ },
});
const t = sluice.throttle('lh', { ratePerSecond: rate, capacity: perLane + 10, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000 });
await t.ready();
for (let j = 0; j < perLane; j++) await Promise.all(Array.from({ length: lanes }, (_, l) => t.submit(`k${l}`, null)));
const total = lanes * perLane;
const t0 = Date.now();
const w = sluice.worker('lh', () => void starts++, { concurrency });
const perSecond: { s: number; starts: number; backs: number }[] = [];
let last = { starts: 0, backs: 0 };
while (starts < total && Date.now() - t0 < 30_000) {
  await new Promise((r) => setTimeout(r, 1000));
  perSecond.push({ s: perSecond.length + 1, starts: starts - last.starts, backs: backs - last.backs });
  last = { starts, backs };
}
const elapsedMs = Date.now() - t0;
console.log(JSON.stringify({ load: loadavg()[0]!.toFixed(2), lanes, perLane, rate, concurrency, total, started: starts, handBacks: backs, elapsedMs, perSecond }));
await w.close();
await sluice.close();
await server.dispose();
