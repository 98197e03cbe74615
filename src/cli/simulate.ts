// `sluice simulate`: replays call times through one or more policies with an injected clock and
// prints each decision, through the reference models or (with --redis) the real scripts.
import { readFileSync } from 'node:fs';
import { Option } from 'commander';
import { SluiceError } from '../errors.js';
import { DEFAULT_BURST } from '../limiters/gcra.js';
import { ALGORITHM_ALIASES, parsePolicy, specOf, type Algorithm, type Policy, type PolicyInput } from '../limiters/policy.js';
import { parseDuration } from '../rules/duration.js';
import type { CommandModule } from './io.js';
import { replayModels, replayRedis } from './simulate-run.js';
import { renderReplay, replayJson } from './simulate-table.js';

const ALGORITHMS: readonly Algorithm[] = ['fixed-window', 'sliding-log', 'sliding-counter', 'token-bucket', 'leaky-bucket', 'concurrency'];
/** What --algorithm and --compare accept: the algorithms and their other names (`gcra`). */
const ALGORITHM_NAMES: readonly string[] = [...ALGORITHMS, ...Object.keys(ALGORITHM_ALIASES)];

/** The simulate flags, as commander parses them. */
export interface SimulateFlags {
  policy: string[];
  algorithm?: string;
  compare?: string;
  limit?: string;
  window?: string;
  capacity?: string;
  refillPerSecond?: string;
  ratePerSecond?: string;
  burst?: string;
  recordRejected?: boolean;
  rounding?: string;
  lease?: string;
  times?: string;
  timesFile?: string;
  cost: string;
  redis?: string;
  json?: boolean;
}

function invalid(message: string): SluiceError {
  return new SluiceError('SLUICE_ERR_INVALID_CONFIG', `simulate: ${message}`);
}

function number(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n)) throw invalid(`--${flag}: '${text}' is not a number`);
  return n;
}

function duration(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (typeof ms === 'string') throw invalid(`--${flag}: ${ms}`);
  return ms;
}

/**
 * The policy one algorithm gets from the shared flags. `--limit` per `--window` maps as in the
 * rules file: windows {limit, windowMs}; token bucket {capacity: limit, refill: limit / window};
 * leaky bucket {rate: limit / window, burst: --burst or the policy's default}. Explicit flags
 * (--capacity, --refill-per-second, --rate-per-second) win. `gcra` is another name of leaky-bucket.
 */
export function policyFromFlags(name: string, f: SimulateFlags): Policy {
  if (!ALGORITHM_NAMES.includes(name)) throw invalid(`unknown algorithm '${name}' (one of ${ALGORITHM_NAMES.join(', ')})`);
  const algorithm: string = (ALGORITHM_ALIASES as Record<string, Algorithm>)[name] ?? name;
  const limit = number('limit', f.limit);
  const windowMs = duration('window', f.window);
  const perSecond = limit !== undefined && windowMs !== undefined ? (limit * 1000) / windowMs : undefined;
  const input: Record<string, unknown> = { algorithm };
  switch (algorithm as Algorithm) {
    case 'fixed-window':
    case 'sliding-log':
    case 'sliding-counter':
      Object.assign(input, { limit, windowMs });
      if (f.recordRejected) input.recordRejected = true;
      if (f.rounding !== undefined) input.rounding = f.rounding;
      break;
    case 'token-bucket':
      Object.assign(input, { capacity: number('capacity', f.capacity) ?? limit, refillPerSecond: number('refill-per-second', f.refillPerSecond) ?? perSecond });
      break;
    case 'leaky-bucket':
      Object.assign(input, { ratePerSecond: number('rate-per-second', f.ratePerSecond) ?? perSecond });
      if (f.burst !== undefined) input.burst = number('burst', f.burst);
      break;
    case 'concurrency':
      Object.assign(input, { limit, leaseMs: duration('lease', f.lease) });
      break;
  }
  return parseFlagPolicy(input as PolicyInput, `--algorithm ${name}`);
}

function parseFlagPolicy(input: unknown, from: string): Policy {
  try {
    return parsePolicy(input);
  } catch (e) {
    if (e instanceof SluiceError) throw invalid(`${from}: ${e.message}`);
    throw e;
  }
}

/** Every policy the flags name: each --policy JSON, then --algorithm, then each --compare algorithm. */
export function policiesOf(f: SimulateFlags): Policy[] {
  const policies = f.policy.map((json, i) => {
    let input: unknown;
    try {
      input = JSON.parse(json);
    } catch (e) {
      throw invalid(`--policy #${i + 1} is not JSON: ${(e as Error).message}`);
    }
    return parseFlagPolicy(input, `--policy #${i + 1}`);
  });
  const algorithms = [...(f.algorithm ? [f.algorithm] : []), ...(f.compare ?? '').split(',').map((a) => a.trim()).filter(Boolean)];
  policies.push(...algorithms.map((a) => policyFromFlags(a, f)));
  if (policies.length === 0) throw invalid('give a policy: --policy JSON, --algorithm NAME or --compare NAME,NAME');
  return policies;
}

/** Call times in seconds from --times (`0.2,0.4`) or --times-file (numbers separated by commas, spaces or lines; `#` comments). */
export function timesOf(f: SimulateFlags): number[] {
  if ((f.times === undefined) === (f.timesFile === undefined)) throw invalid('give exactly one of --times or --times-file');
  let text = f.times ?? '';
  if (f.timesFile !== undefined) {
    try {
      text = readFileSync(f.timesFile, 'utf8').replace(/#.*$/gm, '');
    } catch (e) {
      throw invalid(`--times-file: ${(e as Error).message}`);
    }
  }
  const times = text.split(/[\s,]+/).filter(Boolean).map((t) => {
    const n = Number(t);
    if (!Number.isFinite(n) || n < 0) throw invalid(`'${t}' is not a time in seconds >= 0`);
    return n;
  });
  if (times.length === 0) throw invalid('no call times given');
  times.forEach((t, i) => {
    if (i > 0 && t < times[i - 1]!) throw invalid(`times must not go backwards (${times[i - 1]} then ${t})`);
  });
  return times;
}

/** The `simulate` command. */
export const simulateCommand: CommandModule = {
  name: 'simulate',
  register(program, ctx) {
    program
      .command('simulate')
      .description('replay call times through policies with an injected clock and print every decision')
      .option('--policy <json>', 'a policy as JSON, e.g. \'{"algorithm":"fixed-window","limit":5,"windowMs":60000}\' (repeatable)', (v: string, acc: string[]) => [...acc, v], [])
      .addOption(new Option('-a, --algorithm <name>', 'a policy from the flags below (gcra = leaky-bucket)').choices(ALGORITHM_NAMES))
      .option('--compare <algorithms>', 'also run these algorithms (comma-separated) with the same flags, side by side')
      .option('--limit <n>', 'calls per window (windows, concurrency); capacity of a token bucket')
      .option('--window <duration>', "window, e.g. '60s' or '1m'")
      .option('--capacity <n>', 'token bucket: capacity (default --limit)')
      .option('--refill-per-second <n>', 'token bucket: refill rate (default limit / window)')
      .option('--rate-per-second <n>', 'leaky bucket: rate (default limit / window)')
      .option('--burst <n>', `leaky bucket: burst (default ${DEFAULT_BURST})`)
      .option('--record-rejected', 'sliding log: refused calls are logged too (log-all)')
      .option('--rounding <mode>', 'sliding counter: floor or ceil')
      .option('--lease <duration>', 'concurrency: lease')
      .option('--times <seconds>', 'call times in seconds, comma-separated, e.g. 0.2,0.4,59.9')
      .option('--times-file <file>', 'call times in seconds from a file')
      .option('--cost <n>', 'units per call', '1')
      .option('--redis <url>', 'decide through the real Lua scripts on this Redis (keys are removed afterwards)')
      .option('--json', 'print JSON instead of a table')
      .action(async (flags: SimulateFlags) => {
        const policies = policiesOf(flags);
        const timesS = timesOf(flags);
        const cost = number('cost', flags.cost)!;
        if (!Number.isInteger(cost) || cost < 1) throw invalid('--cost must be an integer >= 1');
        for (const p of policies) {
          const size = specOf(p).limit(p);
          if (cost > size) throw invalid(`--cost ${cost} is larger than ${p.algorithm}'s limit ${size}: no call could ever be allowed`);
        }
        const replay = { policies, timesS, cost };
        const result = flags.redis ? await replayRedis(replay, flags.redis) : replayModels(replay);
        ctx.io.out(flags.json ? replayJson(policies, timesS, cost, result) : renderReplay(policies, timesS, result));
      });
  },
};
