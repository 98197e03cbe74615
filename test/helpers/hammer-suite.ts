// The multi-process exactness check, shared by the single-node and the cluster suites: P processes
// fire N concurrent calls each at one key; exactly `limit` must be allowed, never one more or less.
import type { PolicyInput } from '../../src/index.js';
import { startTsProcess, type ChildHandle } from './processes.js';

export interface HammerCase {
  name: string;
  policy: PolicyInput;
  /** How many calls in total must be allowed. */
  expected: number;
  /** Inject this time into every call (undefined: Redis TIME). */
  nowMs?: number;
}

/** Hard-limit cases: with injected time every algorithm's count is exact; with Redis TIME, those whose state cannot refill during the test. */
export const HAMMER_CASES: HammerCase[] = [
  { name: 'fixed-window', policy: { algorithm: 'fixed-window', limit: 1013, windowMs: 60_000 }, expected: 1013, nowMs: 1_000 },
  { name: 'sliding-log', policy: { algorithm: 'sliding-log', limit: 1013, windowMs: 60_000 }, expected: 1013, nowMs: 1_000 },
  { name: 'sliding-log (log-all)', policy: { algorithm: 'sliding-log', limit: 1013, windowMs: 60_000, recordRejected: true }, expected: 1013, nowMs: 1_000 },
  { name: 'sliding-counter', policy: { algorithm: 'sliding-counter', limit: 1013, windowMs: 60_000 }, expected: 1013, nowMs: 1_000 },
  { name: 'token-bucket', policy: { algorithm: 'token-bucket', capacity: 1013, refillPerSecond: 5 }, expected: 1013, nowMs: 1_000 },
  { name: 'leaky-bucket', policy: { algorithm: 'leaky-bucket', ratePerSecond: 5, burst: 1012 }, expected: 1013, nowMs: 1_000 },
  { name: 'concurrency', policy: { algorithm: 'concurrency', limit: 1013, leaseMs: 60_000 }, expected: 1013, nowMs: 1_000 },
  // Redis TIME: windows and refill too slow to move during the test.
  { name: 'fixed-window, Redis TIME', policy: { algorithm: 'fixed-window', limit: 1201, windowMs: 1e12 }, expected: 1201 },
  { name: 'token-bucket, Redis TIME', policy: { algorithm: 'token-bucket', capacity: 1201, refillPerSecond: 1e-5 }, expected: 1201 },
  { name: 'concurrency, Redis TIME', policy: { algorithm: 'concurrency', limit: 1201, leaseMs: 600_000 }, expected: 1201 },
];

/**
 * P long-lived hammer processes (test/helpers/hammer.ts) that run case after case: each case gets a fresh
 * sluice (its own prefix and connection) in every process, and the processes fire together on "go".
 */
export class HammerPool {
  private constructor(private readonly kids: ChildHandle[]) {}

  static start(target: unknown, processes = 6): HammerPool {
    return new HammerPool(Array.from({ length: processes }, () => startTsProcess('helpers/hammer.ts', [JSON.stringify(target)])));
  }

  /** Runs one case with every process x `callsEach` concurrent calls at `key`; returns the totals. */
  async run(prefix: string, c: HammerCase, key: string, callsEach = 400) {
    const command = JSON.stringify({ cmd: 'case', prefix, policy: c.policy, key, calls: callsEach, ...(c.nowMs === undefined ? {} : { nowMs: c.nowMs }) });
    for (const k of this.kids) k.send(command);
    await Promise.all(this.kids.map((k) => k.message('ready')));
    for (const k of this.kids) k.send('go');
    const results = await Promise.all(this.kids.map((k) => k.message<{ allowed: number; failures: number; leases: number }>('done')));
    return {
      allowed: results.reduce((a, r) => a + r.allowed, 0),
      failures: results.reduce((a, r) => a + r.failures, 0),
      leases: results.reduce((a, r) => a + r.leases, 0),
      perProcess: results.map((r) => r.allowed),
    };
  }

  async close(): Promise<void> {
    for (const k of this.kids) k.send('quit');
    await Promise.all(this.kids.map((k) => k.exited));
  }
}
