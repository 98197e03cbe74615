// A child process that, for each case it is given, fires many concurrent decisions at one key once told
// to go, then reports how many were allowed. It serves case after case (one process start per suite,
// not per case: starting six processes per case cost most of each case's time). argv: <redis target JSON>
// stdin lines: {"cmd":"case",prefix,policy,key,calls,nowMs?} -> {"type":"ready"}; "go" -> {"type":"done",...};
// "quit" -> exits.
import { exitWhenFlushed } from './child-exit.js';
import { createInterface } from 'node:readline';
import { createSluice, type PolicyInput } from '../../src/index.js';

interface CaseCommand {
  cmd: 'case';
  prefix: string;
  policy: PolicyInput;
  key: string;
  calls: number;
  nowMs?: number;
}

const target = JSON.parse(process.argv[2]!) as unknown;
const reply = (msg: object) => process.stdout.write(JSON.stringify(msg) + '\n');

/** One case's sluice (its own prefix and connection, as a fresh process had), warmed and waiting for "go". */
async function prepare(c: CaseCommand) {
  const sluice = createSluice({ redis: target as never, prefix: c.prefix });
  // A generous deadline: the point is exactness under contention, not latency on a loaded machine.
  const limiter = sluice.limiter({ ...c.policy, timeoutMs: 20_000 });
  // Warm the connection and the script cache so that every process starts at full speed.
  await limiter.peek(`${c.key}-warmup`);
  const fire = async () => {
    const decisions = await Promise.all(Array.from({ length: c.calls }, () => limiter.limit(c.key, c.nowMs === undefined ? {} : { nowMs: c.nowMs })));
    await sluice.close();
    return {
      type: 'done',
      allowed: decisions.filter((d) => d.allowed).length,
      failures: decisions.filter((d) => d.failure).length,
      leases: decisions.filter((d) => d.leaseId).length,
    };
  };
  return fire;
}

let pending: (() => Promise<object>) | undefined;
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (line === 'quit') break;
  if (line === 'go') {
    const fire = pending;
    pending = undefined;
    if (fire) reply(await fire());
    continue;
  }
  pending = await prepare(JSON.parse(line) as CaseCommand);
  reply({ type: 'ready' });
}
exitWhenFlushed(0);
