// CPU cost of laying out one decision's ARGV: the named template (src/limiters/decision-args.ts) next to
// the hand-written positional arrays it replaced ([now, ...commonArgs] for the common call, a fresh
// positional array otherwise). CPU time (process.cpuUsage), rounds interleaved, so a busy machine
// weighs on both sides alike.
//   npx tsx bench/decision-args.ts [--calls 2000000] [--rounds 7]
// Prints one JSON document on stdout.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { DecisionArgs } from '../src/limiters/decision-args.js';
import { parsePolicy } from '../src/limiters/policy.js';
import { specOf } from '../src/limiters/policy.js';
import type { ScriptArg } from '../src/redis/script-table.js';

const { values: flags } = parseArgs({ options: { calls: { type: 'string', default: '2000000' }, rounds: { type: 'string', default: '7' } } });
const calls = Number(flags.calls);
const rounds = Number(flags.rounds);
if (!(calls > 0 && calls <= 1e8) || !(rounds > 0 && rounds <= 50)) throw new Error('--calls in (0, 1e8], --rounds in (0, 50]');

const policy = parsePolicy({ algorithm: 'sliding-counter', limit: 100, windowMs: 60_000 });
if (policy.algorithm !== 'sliding-counter') throw new Error('unreachable');
const spec = specOf(policy);
const named = new DecisionArgs(spec.script, spec.policyArgs(policy));
// What limiter.ts did before the script table: the common call's arguments made once, spread per call.
const commonArgs: ScriptArg[] = [policy.limit, policy.windowMs, 1, 1, policy.rounding];
const positional = (cost: number, record: boolean): ScriptArg[] => [policy.limit, policy.windowMs, cost, record ? 1 : 0, policy.rounding];

let sink = 0;
/** CPU µs of `calls` layouts. */
function measure(build: (i: number) => readonly ScriptArg[]): number {
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) sink += build(i).length;
  const used = process.cpuUsage(start);
  return used.user + used.system;
}

const cases = {
  'named, common call (cost 1, recorded)': (i: number) => named.build(i, 1, true, ''),
  'positional, common call': (i: number) => [i, ...commonArgs],
  'named, cost 3 peek': (i: number) => named.build(i, 3, false, ''),
  'positional, cost 3 peek': (i: number) => [i, ...positional(3, false)],
};
const samples: Record<string, number[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (const build of Object.values(cases)) measure(build); // warm-up: JIT
for (let r = 0; r < rounds; r++) for (const [name, build] of Object.entries(cases)) samples[name]!.push(measure(build));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
process.stdout.write(
  JSON.stringify(
    {
      benchmark: 'decision-args',
      at: new Date().toISOString(),
      machine: { cpus: os.cpus().length, node: process.version, loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100) },
      options: { calls, rounds },
      notes: ['ns of CPU per layout, median of the rounds; the positional rows are the code the named template replaced'],
      results: Object.fromEntries(Object.entries(samples).map(([k, xs]) => [k, { nsPerCall: Math.round((median(xs) * 1000 * 100) / calls) / 100, minNs: Math.round((Math.min(...xs) * 1000 * 100) / calls) / 100 }])),
      sink: sink > 0,
    },
    null,
    2,
  ) + '\n',
);
