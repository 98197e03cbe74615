// The sliding counter's real worst case against the sliding log's exact bound: at a limit of 100 per
// 1,000 ms, 150 calls at the very end of window k, then a call every millisecond of window k+1; the
// most calls allowed inside any 999 ms span. Real Redis, injected time (reproducible). Prints JSON.
// npx tsx bench/sliding-counter-worst-case.ts
import { createSluice, type PolicyInput } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';

const LIMIT = 100;
const WINDOW_MS = 1_000;
const SPAN_MS = 999;
const server = await startRedis();
const sluice = createSluice({ redis: server.url, prefix: 'scworst' });
const policies: Record<string, PolicyInput> = {
  'sliding-counter (floor)': { algorithm: 'sliding-counter', limit: LIMIT, windowMs: WINDOW_MS },
  'sliding-counter (ceil)': { algorithm: 'sliding-counter', limit: LIMIT, windowMs: WINDOW_MS, rounding: 'ceil' },
  'sliding-log': { algorithm: 'sliding-log', limit: LIMIT, windowMs: WINDOW_MS },
};

/** Most allowed calls whose times fit in one span of `span` ms (first to last less than `span` apart, inclusive ends). */
function maxInSpan(times: number[], span: number): { count: number; fromMs: number; toMs: number } {
  let best = { count: 0, fromMs: 0, toMs: 0 };
  for (let i = 0, j = 0; j < times.length; j++) {
    while (times[j]! - times[i]! > span) i++;
    if (j - i + 1 > best.count) best = { count: j - i + 1, fromMs: times[i]!, toMs: times[j]! };
  }
  return best;
}

const base = Math.ceil(Date.now() / WINDOW_MS) * WINDOW_MS + 10 * WINDOW_MS; // the start of window k
const results = [];
for (const [name, policy] of Object.entries(policies)) {
  const limiter = sluice.limiter(policy);
  const key = `attack:${name}`;
  const allowed: number[] = [];
  // 150 calls in the last millisecond of window k.
  for (let i = 0; i < 150; i++) if ((await limiter.limit(key, { nowMs: base + WINDOW_MS - 1 })).allowed) allowed.push(WINDOW_MS - 1);
  // One call at every millisecond of window k+1.
  for (let t = WINDOW_MS; t < 2 * WINDOW_MS; t++) if ((await limiter.limit(key, { nowMs: base + t })).allowed) allowed.push(t);
  const worst = maxInSpan(allowed, SPAN_MS);
  results.push({ policy: name, limit: LIMIT, windowMs: WINDOW_MS, spanMs: SPAN_MS, maxAllowedInSpan: worst.count, spanFromMs: worst.fromMs, spanToMs: worst.toMs });
}
console.log(JSON.stringify({ bench: 'sliding-counter-worst-case', results }, null, 2));
await sluice.close();
await server.dispose();
