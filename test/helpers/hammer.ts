// A child process that fires many concurrent decisions at one key once told to go, then reports
// how many were allowed. argv: <redis target JSON> <prefix> <policy JSON> <key> <calls> <nowMs|''>
import { exitWhenFlushed } from './child-exit.js';
import { createInterface } from 'node:readline';
import { createSluice } from '../../src/index.js';

const [target, prefix, policyJson, key, callsArg, nowArg] = process.argv.slice(2);
const sluice = createSluice({ redis: JSON.parse(target!), prefix: prefix! });
// A generous deadline: the point is exactness under contention, not latency on a loaded machine.
const limiter = sluice.limiter({ ...JSON.parse(policyJson!), timeoutMs: 20_000 });
const calls = Number(callsArg);
const nowMs = nowArg ? Number(nowArg) : undefined;

// Warm the connection and the script cache so that every process starts at full speed.
await limiter.peek(`${key}-warmup`);
process.stdout.write(JSON.stringify({ type: 'ready' }) + '\n');

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (line !== 'go') continue;
  const decisions = await Promise.all(Array.from({ length: calls }, () => limiter.limit(key!, nowMs === undefined ? {} : { nowMs })));
  const leases = decisions.filter((d) => d.leaseId).length;
  process.stdout.write(
    JSON.stringify({
      type: 'done',
      allowed: decisions.filter((d) => d.allowed).length,
      failures: decisions.filter((d) => d.failure).length,
      leases,
    }) + '\n',
  );
  break;
}
await sluice.close();
exitWhenFlushed(0);
