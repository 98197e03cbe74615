// A soak of the throttle (`npx tsx bench/soak.ts` runs this file; so does test/faults/soak.long.test.ts):
// a private redis-server, worker processes (test/helpers/throttle-proc.ts), a seeded Zipf-skewed load
// well above the lanes' rate, chaos meanwhile (lane and throttle pauses, a
// worker SIGKILLed mid-job and replaced), then the drain and every documented guarantee checked against
// what was recorded and what Redis holds (this folder). Scenarios: `cap` (a global cap), `nocap`,
// `burst` (burst 3), `quota` (a refusing key quota of 25 calls a day).
//   npx tsx test/helpers/soak/cli.ts [--scenario cap|nocap|burst|quota] [--seed 1] [--keys 400] [--rate 300 submits/s]
//     [--duration 40 s] [--lane-rate 10] [--capacity 8] [--procs 3] [--concurrency 8]
//     [--pause-every-ms 500 (0: none)] [--global-pauses 0] [--kill-at 20 s (0: none)] [--drain-timeout 60 s]
//     [--masters 1 (3: a private 3-master cluster)] [--shards (default: masters)] [--dump records.json]
// Prints one JSON document on stdout (figures, violations, notes); progress goes to stderr. Exit code:
// 0 no violation, 1 violations (a documented guarantee broken), 2 the run itself failed, 3 the watchdog
// ended a run that overran (or a signal ended it).
import { parseArgs } from 'node:util';
import { Findings } from './findings.js';
import { wallMs } from './records.js';
import { runSoak } from './run.js';
import { SCENARIOS, throttleConfigOf, type Scenario, type SoakSettings } from './scenario.js';
import { startTarget } from './target.js';

const { values: flags } = parseArgs({
  options: {
    scenario: { type: 'string', default: 'cap' },
    seed: { type: 'string', default: '1' },
    keys: { type: 'string', default: '400' },
    rate: { type: 'string', default: '300' },
    duration: { type: 'string', default: '40' },
    'lane-rate': { type: 'string', default: '10' },
    capacity: { type: 'string', default: '8' },
    procs: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '8' },
    'pause-every-ms': { type: 'string', default: '500' },
    'global-pauses': { type: 'string', default: '0' },
    'kill-at': { type: 'string', default: '20' },
    'drain-timeout': { type: 'string', default: '60' },
    masters: { type: 'string', default: '1' },
    shards: { type: 'string' },
    dump: { type: 'string' },
  },
});

/** A flag as a number within [min, max]; anything else ends the run before it starts. */
function numberFlag(name: keyof typeof flags, min: number, max: number): number {
  const value = Number(flags[name]);
  if (!(value >= min && value <= max)) throw new Error(`--${name}: ${min} .. ${max}`);
  return value;
}

if (!SCENARIOS.includes(flags.scenario as Scenario)) throw new Error(`--scenario: one of ${SCENARIOS.join(', ')}`);
const settings: SoakSettings = {
  scenario: flags.scenario as Scenario,
  seed: numberFlag('seed', 0, 2 ** 32 - 1),
  keys: numberFlag('keys', 1, 100_000),
  submitsPerSecond: numberFlag('rate', 1, 10_000),
  durationMs: numberFlag('duration', 1, 3_600) * 1000,
  laneRatePerSecond: numberFlag('lane-rate', 1, 1_000),
  capacity: numberFlag('capacity', 3, 1_000_000),
  procs: numberFlag('procs', 1, 16),
  concurrency: numberFlag('concurrency', 1, 1_000),
  pauseEveryMs: numberFlag('pause-every-ms', 0, 3_600_000),
  globalPauses: numberFlag('global-pauses', 0, 100),
  killAtMs: numberFlag('kill-at', 0, 3_600) * 1000,
  drainTimeoutMs: numberFlag('drain-timeout', 1, 3_600) * 1000,
  masters: numberFlag('masters', 1, 9),
  shards: flags.shards === undefined ? numberFlag('masters', 1, 9) : numberFlag('shards', 1, 64),
};
if (settings.masters === 2) throw new Error('--masters: 1 (one redis-server) or a cluster of 3 or more');
if (settings.killAtMs >= settings.durationMs) throw new Error('--kill-at: within --duration (0: no kill)');

const begin = wallMs();
const log = (msg: string) => process.stderr.write(`[soak ${settings.scenario} ${((wallMs() - begin) / 1000).toFixed(1)}s] ${msg}\n`);
const findings = new Findings();
const report = (figures: Record<string, unknown>) =>
  process.stdout.write(`${JSON.stringify({ bench: 'soak', at: new Date().toISOString(), settings, config: throttleConfigOf(settings), figures, ...findings.report() }, null, 2)}\n`);

// A run never hangs: past the load, the drain's own deadline and the checks' (the capacity check's
// jobs 30 s, reads, closes), it ends. Exit hooks of the process helpers SIGKILL the worker processes and
// the redis-server.
const WATCHDOG_MS = settings.durationMs + settings.drainTimeoutMs + 120_000;
setTimeout(() => {
  findings.violation('watchdog', 'a run ends', { afterMs: WATCHDOG_MS });
  report({});
  process.exit(3);
}, WATCHDOG_MS).unref();

// Ended from outside (a test's deadline, Ctrl-C): exit through the exit hooks, so the worker processes
// and the redis-server go too (a bare signal would leave them running).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    log(`${signal}: exiting`);
    process.exit(3);
  });
}

const redis = await startTarget(settings.masters);
log(`redis ${redis.url}`);
let code = 0;
try {
  report(await runSoak({ settings, redisUrl: redis.url, findings, log, dumpPath: flags.dump }));
  code = findings.violated ? 1 : 0;
} catch (error) {
  log(`run failed: ${(error as Error).stack}`);
  findings.violation('run-failed', 'the run completes', String(error));
  report({});
  code = 2;
} finally {
  await redis.dispose();
}
log(`done: ${findings.report().violations.length} kinds of violation`);
process.exit(code);
