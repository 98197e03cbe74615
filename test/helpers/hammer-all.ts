// A child process that fires many concurrent all-or-nothing requests (each needing several limits,
// decided by limitAll) once told to go, then reports how many were allowed.
// argv: <redis target JSON> <prefix> <limits JSON: [{policy, key, slot?}]> <calls> <nowMs>
import { exitWhenFlushed } from './child-exit.js';
import { createInterface } from 'node:readline';
import { createSluice, type PolicyInput } from '../../src/index.js';
import { limitAll } from '../../src/limiters/all-or-nothing.js';

const [target, prefix, limitsJson, callsArg, nowArg] = process.argv.slice(2);
const sluice = createSluice({ redis: JSON.parse(target!), prefix: prefix! });
const specs = JSON.parse(limitsJson!) as { policy: PolicyInput; key: string; slot?: string }[];
// A generous deadline: the point is exactness under contention, not latency on a loaded machine.
const limiters = specs.map((s) => sluice.limiter({ ...s.policy, timeoutMs: 20_000 } as PolicyInput));
const calls = Number(callsArg);
const nowMs = Number(nowArg);
const request = () => limitAll(specs.map((s, i) => ({ limiter: limiters[i]!, key: s.key, options: { nowMs, ...(s.slot ? { slot: s.slot } : {}) } })));

// Warm the connection and the script cache so that every process starts at full speed.
await limitAll(specs.map((s, i) => ({ limiter: limiters[i]!, key: `${s.key}-warmup`, options: { nowMs, ...(s.slot ? { slot: s.slot } : {}) } })));
process.stdout.write(JSON.stringify({ type: 'ready' }) + '\n');

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (line !== 'go') continue;
  const results = await Promise.all(Array.from({ length: calls }, request));
  process.stdout.write(
    JSON.stringify({
      type: 'done',
      allowed: results.filter((r) => r.allowed).length,
      failures: results.filter((r) => r.decisions.some((d) => d.failure)).length,
      // A refused request whose every limit said "allowed" would be a charge undone or lost: never.
      refusedWithoutReason: results.filter((r) => !r.allowed && r.decisions.every((d) => d.allowed)).length,
    }) + '\n',
  );
  break;
}
await sluice.close();
exitWhenFlushed(0);
