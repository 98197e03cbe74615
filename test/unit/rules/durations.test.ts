// Rules-file failure family: bad durations, wherever a duration is taken; and what good ones mean.
import { describe, expect, it } from 'vitest';
import { formatDuration, parseDuration } from '../../../src/rules/duration.js';
import { expectIssue, type FailureCase } from './issues-helper.js';

const node = (fields: string) => `domains:\n  - domain: api\n    descriptors:\n      - key: ip\n${fields}`;
const N = 'domains.0.descriptors.0';
const queue = (fields: string) => `queues:\n  - name: q\n    rate_per_second: 1\n    capacity: 5\n${fields}    handler: { type: module, path: ./h.js }\n`;

const cases: FailureCase[] = [
  ['timeout without a unit', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        timeout: 150\n'), `${N}.timeout`, 6, "a duration needs a unit: write '150ms' or '150s'"],
  ['timeout in words', node("        rate_limit: { unit: second, requests_per_unit: 5 }\n        timeout: 'two seconds'\n"), `${N}.timeout`, 6, "'two seconds' is not a duration"],
  ['timeout too long', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        timeout: 2m\n'), `${N}.timeout`, 6, "'2m' must be between 1ms and 1m"],
  ['policy window in words', node('        policy: { algorithm: fixed-window, limit: 5, window: "a minute" }\n'), `${N}.policy.window`, 5, "'a minute' is not a duration"],
  ['zero window', node('        policy: { algorithm: fixed-window, limit: 5, window: 0s }\n'), `${N}.policy.window`, 5, "'0s' must be between 1ms"],
  ['units smallest first', node('        policy: { algorithm: fixed-window, limit: 5, window: 30s1m }\n'), `${N}.policy.window`, 5, 'largest first'],
  ['fraction of a millisecond', node('        policy: { algorithm: fixed-window, limit: 5, window: 1.5ms }\n'), `${N}.policy.window`, 5, 'not a whole number of milliseconds'],
  ['lease as a list', node('        policy: { algorithm: concurrency, limit: 2, lease: [5m] }\n'), `${N}.policy.lease`, 5, 'Invalid input'],
  ['max_wait with a space', queue('    max_wait: 30 s\n'), 'queues.0.max_wait', 5, "'30 s' is not a duration"],
  ['backoff delay without a unit', queue('    backoff: { type: fixed, delay: 1000 }\n'), 'queues.0.backoff.delay', 5, 'a duration needs a unit'],
  ['handler timeout negative', `queues:\n  - name: q\n    rate_per_second: 1\n    capacity: 5\n    handler: { type: http, url: "https://x.example", timeout: -1s }\n`, 'queues.0.handler.timeout', 5, "'-1s' is not a duration"],
];

describe('bad durations are refused with their path and line', () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });
});

describe('parseDuration and formatDuration', () => {
  it.each([
    ['250ms', 250],
    ['1.5s', 1500],
    ['30s', 30_000],
    ['1m30s', 90_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1d2h3m4s5ms', 93_784_005],
    [' 5s ', 5000],
  ])('%s = %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '5', 's', '5 s', '5sec', '1s1s', '-5s', '1e3ms'])('%j is refused', (text) => {
    expect(typeof parseDuration(text)).toBe('string');
  });

  it.each([
    [0, '0ms'],
    [250, '250ms'],
    [1000, '1s'],
    [90_000, '1m30s'],
    [86_400_000, '1d'],
    [3_600_500, '1h500ms'],
  ])('%d ms reads %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });
});
