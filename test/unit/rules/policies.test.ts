// Rules-file failure family: a rule's limit does not make a valid policy (checked by the one policy
// schema, reported at the rule's own field), or a rule has zero or several limits.
import { describe, it } from 'vitest';
import { expectIssue, type FailureCase } from './issues-helper.js';

const node = (fields: string) => `domains:\n  - domain: api\n    descriptors:\n      - key: ip\n${fields}`;
const N = 'domains.0.descriptors.0';

const cases: FailureCase[] = [
  ['missing parameter', node('        policy: { algorithm: fixed-window, limit: 5 }\n'), `${N}.policy.window`, 5, 'required for fixed-window'],
  ['parameter of another algorithm', node('        policy:\n          algorithm: token-bucket\n          capacity: 5\n          refill_per_second: 1\n          window: 1m\n'), `${N}.policy.window`, 9, 'not a token-bucket parameter'],
  ['concurrency without lease', node('        policy: { algorithm: concurrency, limit: 2 }\n'), `${N}.policy.lease`, 5, 'required for concurrency'],
  ['inexact sliding counter', node('        policy: { algorithm: sliding-counter, limit: 1000000000000, window: 100d }\n'), `${N}.policy.limit`, 5, 'must stay below 2^53'],
  ['inexact token bucket', node('        policy: { algorithm: token-bucket, capacity: 1000000000, refill_per_second: 0.001 }\n'), `${N}.policy.capacity`, 5, 'must stay below 2^52'],
  ['rate above what a bucket refills', node('        rate_limit: { unit: second, requests_per_unit: 2000000 }\n        algorithm: token-bucket\n'), `${N}.rate_limit.requests_per_unit`, 5, 'expected number to be <=1000000'],
  ['burst without leaky bucket', node('        rate_limit: { unit: second, requests_per_unit: 5, burst: 3 }\n'), `${N}.rate_limit.burst`, 5, 'burst is a leaky-bucket parameter'],
  ['algorithm without rate_limit', node('        policy: { algorithm: fixed-window, limit: 5, window: 1m }\n        algorithm: fixed-window\n'), `${N}.algorithm`, 6, 'algorithm goes with rate_limit'],
  ['two limits', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        policy: { algorithm: fixed-window, limit: 5, window: 1m }\n'), N, 4, 'give only one of rate_limit, policy, plan or unlimited (found rate_limit, policy)'],
  ['limit and unlimited', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        unlimited: true\n'), N, 4, '(found rate_limit, unlimited)'],
  ['no limit and no children', node('        name: per-ip\n'), N, 4, 'this descriptor does nothing'],
  ['name without a limit', node('        name: per-ip\n        descriptors: [{ key: x, unlimited: true }]\n'), `${N}.name`, 5, 'only a descriptor that limits takes name'],
  ['shadow mode without a limit', node('        shadow_mode: true\n        descriptors: [{ key: x, unlimited: true }]\n'), `${N}.shadow_mode`, 5, 'only a descriptor that limits takes shadow_mode'],
  ['unlimited with a fail mode', node('        unlimited: true\n        fail_mode: closed\n'), `${N}.fail_mode`, 6, 'an unlimited descriptor takes no fail_mode'],
  ['plan without a limit', 'plans:\n  free:\n    fail_mode: closed\n', 'plans.free', 3, 'a plan needs rate_limit or policy'],
  ['plan with two limits', 'plans:\n  free:\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n    policy: { algorithm: fixed-window, limit: 5, window: 1m }\n', 'plans.free', 3, 'give only one of rate_limit or policy'],
  ['plan policy missing a parameter', 'plans:\n  free:\n    policy: { algorithm: sliding-log, window: 1m }\n', 'plans.free.policy.limit', 3, 'required for sliding-log'],
];

describe('rule limits that make no valid policy are refused at the rule', () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });
});
