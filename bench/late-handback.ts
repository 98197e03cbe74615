// A deep backlog in fast lanes drained by one in-process worker: starts and hand-backs (late jobs sent
// back to their lane) per second, until all started or 30 s. Prints JSON. `npx tsx bench/late-handback.ts [lanes] [perLane] [rate] [concurrency] [globalCap]`
// (also the most starts in any 1 s of the start instants, which must not pass the cap)
import { loadavg } from 'node:os';
import { createSluice } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';

const [lanes = 20, perLane = 100, rate = 500, concurrency = 50, cap = 0] = process.argv.slice(2).map(Number);
const server = await startRedis();
let starts = 0;
let backs = 0;
const sluice = createSluice({
  redis: server.url,
  prefix: 'lh',
  observer: { onDecision: () => undefined, onDefer: () => void backs++ },
});
const t = sluice.throttle('lh', { ratePerSecond: rate, capacity: perLane + 10, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000, ...(cap > 0 ? { globalRatePerSecond: cap } : {}) });
await t.ready();
for (let j = 0; j < perLane; j++) await Promise.all(Array.from({ length: lanes }, (_, l) => t.submit(`k${l}`, null)));
const total = lanes * perLane;
const t0 = Date.now();
const slots: number[] = [];
const w = sluice.worker('lh', (job) => void (starts++, slots.push(job.slotMs)), { concurrency });
const perSecond: { s: number; starts: number; backs: number }[] = [];
let last = { starts: 0, backs: 0 };
while (starts < total && Date.now() - t0 < 30_000) {
  await new Promise((r) => setTimeout(r, 1000));
  perSecond.push({ s: perSecond.length + 1, starts: starts - last.starts, backs: backs - last.backs });
  last = { starts, backs };
}
const elapsedMs = Date.now() - t0;
slots.sort((a, b) => a - b);
let maxIn1s = 0;
for (let i = 0, j = 0; i < slots.length; i++) {
  while (slots[i]! - slots[j]! >= 1000) j++;
  maxIn1s = Math.max(maxIn1s, i - j + 1);
}
console.log(JSON.stringify({ load: loadavg()[0]!.toFixed(2), lanes, perLane, rate, concurrency, total, cap, started: starts, handBacks: backs, maxStartsIn1s: maxIn1s, elapsedMs, perSecond }));
await w.close();
await sluice.close();
await server.dispose();
