// A queue's throttle settings in the rules file are the throttle's own (src/throttle/config.ts):
// every bound refused at both ends with its path and line, and a queue that sets every field
// compiles to exactly the settings the throttle takes (only the fields the file sets).
import { describe, expect, it } from 'vitest';
import { parseRules } from '../../../src/rules/index.js';
import { parseThrottleConfig } from '../../../src/throttle/config.js';
import { expectIssue, type FailureCase } from './issues-helper.js';

/** A queue `q` with rate 1 and capacity 5 unless `fields` (from line 3) replace them. */
const queue = (fields: string) => `queues:\n  - name: q\n${fields}    handler: { type: module, path: ./h.js }\n`;
const rated = (fields: string) => queue(`    rate_per_second: 1\n    capacity: 5\n${fields}`); // fields from line 5
const plan = (fields: string) => rated(`    plans:\n      pro: { ${fields} }\n`); // the plan on line 6
const Q = 'queues.0';

const cases: FailureCase[] = [
  ['rate 0', queue('    rate_per_second: 0\n    capacity: 5\n'), `${Q}.rate_per_second`, 3, 'expected number to be >0'],
  ['rate above 100,000', queue('    rate_per_second: 100001\n    capacity: 5\n'), `${Q}.rate_per_second`, 3, 'expected number to be <=100000'],
  ['capacity 0', queue('    rate_per_second: 1\n    capacity: 0\n'), `${Q}.capacity`, 4, 'expected number to be >0'],
  ['capacity above 10,000,000', queue('    rate_per_second: 1\n    capacity: 10000001\n'), `${Q}.capacity`, 4, 'expected number to be <=10000000'],
  ['global rate 0', rated('    global_rate_per_second: 0\n'), `${Q}.global_rate_per_second`, 5, 'expected number to be >0'],
  ['global rate above 100,000', rated('    global_rate_per_second: 100001\n'), `${Q}.global_rate_per_second`, 5, 'expected number to be <=100000'],
  ['burst below 0', rated('    burst: -1\n'), `${Q}.burst`, 5, 'expected number to be >=0'],
  ['burst above 1,000,000', rated('    burst: 1000001\n'), `${Q}.burst`, 5, 'expected number to be <=1000000'],
  ['fractional burst', rated('    burst: 1.5\n'), `${Q}.burst`, 5, 'expected int'],
  ['attempts 0', rated('    attempts: 0\n'), `${Q}.attempts`, 5, 'expected number to be >0'],
  ['attempts above 1,000', rated('    attempts: 1001\n'), `${Q}.attempts`, 5, 'expected number to be <=1000'],
  ['payload bytes 0', rated('    max_payload_bytes: 0\n'), `${Q}.max_payload_bytes`, 5, 'expected number to be >0'],
  ['payload bytes above 64 MiB', rated('    max_payload_bytes: 67108865\n'), `${Q}.max_payload_bytes`, 5, 'expected number to be <=67108864'],
  ['max_wait 0', rated('    max_wait: 0s\n'), `${Q}.max_wait`, 5, "'0s' must be between 1ms and 365d"],
  ['max_wait above a year', rated('    max_wait: 366d\n'), `${Q}.max_wait`, 5, "'366d' must be between 1ms and 365d"],
  ['backoff delay above a week', rated('    backoff: { type: fixed, delay: 7d1ms }\n'), `${Q}.backoff.delay`, 5, "'7d1ms' must be between 0ms and 7d"],
  ['plan rate 0', plan('rate_per_second: 0, capacity: 5'), `${Q}.plans.pro.rate_per_second`, 6, 'expected number to be >0'],
  ['plan rate above 100,000', plan('rate_per_second: 100001, capacity: 5'), `${Q}.plans.pro.rate_per_second`, 6, 'expected number to be <=100000'],
  ['plan capacity above 10,000,000', plan('rate_per_second: 1, capacity: 10000001'), `${Q}.plans.pro.capacity`, 6, 'expected number to be <=10000000'],
  ['plan burst above 1,000,000', plan('rate_per_second: 1, capacity: 5, burst: 1000001'), `${Q}.plans.pro.burst`, 6, 'expected number to be <=1000000'],
  ['plan max_wait 0', plan('rate_per_second: 1, capacity: 5, max_wait: 0ms'), `${Q}.plans.pro.max_wait`, 6, "'0ms' must be between 1ms and 365d"],
  ['plan without capacity', plan('rate_per_second: 1'), `${Q}.plans.pro.capacity`, 6, 'required field is missing'],
  ['unknown plan field', plan('rate_per_second: 1, capacity: 5, attempts: 2'), `${Q}.plans.pro.attempts`, 6, 'unknown field'],
  ['bad plan name', rated('    plans:\n      "pro plan": { rate_per_second: 1, capacity: 5 }\n'), `${Q}.plans.pro plan`, 6, "bad name 'pro plan'"],
  ['bad default plan name', rated('    default_plan: "pro plan"\n'), `${Q}.default_plan`, 5, 'letters, digits'],
  ['shards 0', rated('    shards: 0\n'), `${Q}.shards`, 5, 'expected number to be >=1'],
  ['shards above 64', rated('    shards: 65\n'), `${Q}.shards`, 5, 'expected number to be <=64'],
  ['pacing margin above a half', rated('    pacing_margin: 0.6\n'), `${Q}.pacing_margin`, 5, 'expected number to be <=0.5'],
  ['pacing margin below 0', rated('    pacing_margin: -0.01\n'), `${Q}.pacing_margin`, 5, 'expected number to be >=0'],
  ['a cap below one start per shard', rated('    global_rate_per_second: 2\n    shards: 3\n'), `${Q}.shards`, 6, 'need a global_rate_per_second of at least 3'],
  ['a queue quota when sharded', rated('    shards: 2\n    quotas:\n      - { scope: queue, period: day, limit: 100 }\n'), `${Q}.quotas.0.scope`, 7, 'needs shards 1'],
];

describe("a queue's throttle settings hold the throttle's bounds", () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });

  it('the bounds themselves are accepted', () => {
    const rules = parseRules(
      queue(
        '    rate_per_second: 100000\n    capacity: 10000000\n    global_rate_per_second: 100000\n    burst: 1000000\n    attempts: 1000\n' +
          '    max_payload_bytes: 67108864\n    max_wait: 365d\n    backoff: { type: fixed, delay: 7d }\n',
      ),
      { filename: 'rules.yaml' },
    );
    expect(rules.queues[0]!.throttle).toStrictEqual({
      ratePerSecond: 100_000,
      capacity: 10_000_000,
      maxWaitMs: 365 * 86_400_000,
      globalRatePerSecond: 100_000,
      burst: 1_000_000,
      attempts: 1000,
      backoff: { type: 'fixed', delayMs: 7 * 86_400_000 },
      maxPayloadBytes: 67_108_864,
    });
    expect(parseRules(rated('    burst: 0\n    backoff: { type: fixed, delay: 0ms }\n')).queues[0]!.throttle.backoff).toStrictEqual({ type: 'fixed', delayMs: 0 });
  });
});

describe('a queue compiles to the settings the throttle takes', () => {
  it('every field, under its throttle name, and nothing the file leaves out', () => {
    const rules = parseRules(
      rated(
        '    max_wait: 1m30s\n    global_rate_per_second: 50\n    burst: 3\n    attempts: 4\n    backoff: { type: exponential, delay: 250ms }\n' +
          '    max_payload_bytes: 1024\n    plans:\n      pro: { rate_per_second: 20, capacity: 100, burst: 2, max_wait: 1m }\n      free: { rate_per_second: 0.5, capacity: 2 }\n' +
          '    default_plan: free\n    upstream: { learn: false, floor_per_second: 0.5, scope: queue, send_headroom: 20ms }\n    shards: 3\n    pacing_margin: 0.015\n',
      ),
    );
    const settings = rules.queues[0]!.throttle;
    expect(settings).toStrictEqual({
      ratePerSecond: 1,
      capacity: 5,
      maxWaitMs: 90_000,
      globalRatePerSecond: 50,
      burst: 3,
      attempts: 4,
      backoff: { type: 'exponential', delayMs: 250 },
      maxPayloadBytes: 1024,
      plans: { pro: { ratePerSecond: 20, capacity: 100, burst: 2, maxWaitMs: 60_000 }, free: { ratePerSecond: 0.5, capacity: 2 } },
      defaultPlan: 'free',
      upstream: { learn: false, floorPerSecond: 0.5, scope: 'queue', sendHeadroomMs: 20 },
      shards: 3,
      pacingMargin: 0.015,
    });
    // The throttle takes them as they are, its defaults filling the rest.
    expect(parseThrottleConfig('q', settings)).toMatchObject({ ...settings, leadMs: 50 });
  });

  it('a queue with only rate and capacity leaves every default to the throttle', () => {
    const settings = parseRules(rated('')).queues[0]!.throttle;
    expect(settings).toStrictEqual({ ratePerSecond: 1, capacity: 5 });
    expect(parseThrottleConfig('q', settings)).toMatchObject({ burst: 0, attempts: 1, maxPayloadBytes: 256 * 1024, upstream: { learn: true } });
  });
});
