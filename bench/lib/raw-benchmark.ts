// The raw server ceiling: redis-benchmark running one EVALSHA of a sluice script, with the exact
// expanded Lua that loadScripts() registers and the exact arguments a Limiter sends.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { parsePolicy, type PolicyInput } from '../../src/index.js';
import { DecisionArgs } from '../../src/limiters/decision-args.js';
import { specOf } from '../../src/limiters/policy.js';
import { loadScripts } from '../../src/redis/script-forms.js';

const run = promisify(execFile);

export interface RawResult {
  script: string;
  keys: 'hot' | 'rand';
  clients: number;
  pipeline: number;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

/** The Lua source of `script` as the registry loads it (includes expanded). */
export function expandedLua(script: string): string {
  const s = loadScripts().get(script);
  if (!s) throw new Error(`no script ${script}`);
  return s.lua;
}

/** The script name and ARGV a `limit()` call of cost 1 sends for `policy` (time '' = Redis TIME). */
export function scriptCall(input: PolicyInput): { script: string; args: string[] } {
  const policy = parsePolicy(input);
  const spec = specOf(policy);
  const leaseId = policy.algorithm === 'concurrency' ? 'benchlease0000000' : '';
  const args = new DecisionArgs(spec.script, spec.policyArgs(policy)).build('', 1, true, leaseId);
  return { script: spec.script, args: args.map(String) };
}

/**
 * Runs redis-benchmark: `-c clients -P pipeline -n requests`, hot key or `__rand_int__` keys over
 * `-r 100000`. Returns its requests/s and latency percentiles (of a pipelined batch when P > 1).
 */
export async function redisBenchmark(o: {
  port: number;
  sha: string;
  script: string;
  key: string;
  args: string[];
  keys: 'hot' | 'rand';
  clients: number;
  pipeline: number;
  requests: number;
}): Promise<RawResult> {
  const argv = ['-h', '127.0.0.1', '-p', String(o.port), '-c', String(o.clients), '-P', String(o.pipeline), '-n', String(o.requests), '--csv'];
  if (o.keys === 'rand') argv.push('-r', '100000');
  argv.push('EVALSHA', o.sha, '1', o.key, ...o.args);
  const { stdout } = await run('redis-benchmark', argv, { timeout: 120_000, maxBuffer: 1 << 20 });
  const line = stdout.trim().split('\n').pop() ?? '';
  const cells = [...line.matchAll(/"([^"]*)"/g)].map((m) => m[1]!);
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
  const rps = Number(cells[1]);
  if (!Number.isFinite(rps) || rps <= 0) throw new Error(`redis-benchmark: cannot read its output: ${stdout.slice(0, 300)}`);
  return {
    script: o.script,
    keys: o.keys,
    clients: o.clients,
    pipeline: o.pipeline,
    requests: o.requests,
    rps: Math.round(rps),
    p50Ms: Number(cells[4]),
    p99Ms: Number(cells[6]),
  };
}
