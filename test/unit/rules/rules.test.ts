// A valid rules file compiles into frozen Rules: policies parsed once (camelCase), plans, names,
// queues; every problem of a bad file is reported at once; the docs' example is valid.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseRules, formatOf } from '../../../src/rules/rules.js';
import { issuesOf } from './issues-helper.js';

const text = `plans:
  free: { rate_limit: { unit: minute, requests_per_unit: 100 } }
  paid:
    rate_limit: { unit: minute, requests_per_unit: 1000 }
    algorithm: token-bucket
    fail_mode: closed
domains:
  - domain: api
    descriptors:
      - key: plan
        value: free
        descriptors:
          - { key: api_key, plan: free }
      - key: plan
        value: paid
        descriptors:
          - { key: api_key, plan: paid, timeout: 50ms }
      - key: ip
        rate_limit: { unit: second, requests_per_unit: 20 }
        algorithm: fixed-window
      - key: meter
        rate_limit: { unit: second, requests_per_unit: 10, burst: 4 }
        algorithm: leaky-bucket
      - key: route
        value: export
        descriptors:
          - key: api_key
            name: export-concurrency
            policy: { algorithm: concurrency, limit: 2, lease: 5m }
      - key: global
        rate_limit: { unit: day, requests_per_unit: 5 }
        shadow_mode: true
      - key: internal
        unlimited: true
queues:
  - name: payments
    rate_per_second: 5
    capacity: 100
    max_wait: 30s
    global_rate_per_second: 50
    attempts: 3
    backoff: { type: exponential, delay: 1s }
    key: header:X-Tenant
    handler:
      type: http
      url: https://api.example.com/charge
      headers:
        Authorization: { env: PAYMENTS_TOKEN }
        Accept: application/json
  - name: orders
    rate_per_second: 2
    capacity: 1000
    handler: { type: module, path: ./handlers/orders.js, export: handle }
`;

describe('parseRules', () => {
  const rules = parseRules(text, { filename: '/etc/sluice/rules.yaml' });

  it('maps each rate_limit to the camelCase policy of its algorithm, named after the rule', () => {
    const byId = Object.fromEntries(rules.rules.map((r) => [r.id, r]));
    expect(Object.keys(byId)).toEqual([
      'api/plan=free/api_key',
      'api/plan=paid/api_key',
      'api/ip',
      'api/meter',
      'api/route=export/api_key',
      'api/global',
      'api/internal',
    ]);
    expect(byId['api/plan=free/api_key']).toMatchObject({
      name: 'api.plan_free.api_key',
      plan: 'free',
      policy: { algorithm: 'sliding-counter', limit: 100, windowMs: 60_000, name: 'api.plan_free.api_key', failMode: 'open', timeoutMs: 200 },
    });
    // The plan's fail mode, the node's own timeout.
    expect(byId['api/plan=paid/api_key']!.policy).toMatchObject({ algorithm: 'token-bucket', capacity: 1000, failMode: 'closed', timeoutMs: 50 });
    expect(byId['api/plan=paid/api_key']!.policy).toHaveProperty('refillPerSecond', 1000 / 60);
    expect(byId['api/ip']!.policy).toMatchObject({ algorithm: 'fixed-window', limit: 20, windowMs: 1000 });
    expect(byId['api/meter']!.policy).toMatchObject({ algorithm: 'leaky-bucket', ratePerSecond: 10, burst: 4 });
    expect(byId['api/route=export/api_key']).toMatchObject({ name: 'export-concurrency', policy: { algorithm: 'concurrency', limit: 2, leaseMs: 300_000 } });
    expect(byId['api/global']).toMatchObject({ shadowMode: true, policy: { windowMs: 86_400_000 } });
    expect(byId['api/internal']).toMatchObject({ unlimited: true, policy: null, shadowMode: false });
    expect(byId['api/ip']!.source).toEqual({ file: '/etc/sluice/rules.yaml', line: 18, column: 9 });
  });

  it('compiles plans and queues (module paths relative to the rules file; only set throttle fields)', () => {
    expect(rules.plans.free).toMatchObject({ algorithm: 'sliding-counter', limit: 100 });
    expect(rules.queues).toEqual([
      {
        name: 'payments',
        throttle: { ratePerSecond: 5, capacity: 100, maxWaitMs: 30_000, globalRatePerSecond: 50, attempts: 3, backoff: { type: 'exponential', delayMs: 1000 } },
        key: { type: 'header', name: 'X-Tenant' },
        handler: {
          type: 'http',
          url: 'https://api.example.com/charge',
          method: 'POST',
          timeoutMs: 10_000,
          headers: { Authorization: { env: 'PAYMENTS_TOKEN' }, Accept: { value: 'application/json' } },
        },
      },
      {
        name: 'orders',
        throttle: { ratePerSecond: 2, capacity: 1000 },
        key: { type: 'body' },
        handler: { type: 'module', path: '/etc/sluice/handlers/orders.js', exportName: 'handle' },
      },
    ]);
    expect(rules.queue('orders')?.name).toBe('orders');
    expect(rules.queue('nope')).toBeUndefined();
  });

  it('is frozen all the way down', () => {
    expect(Object.isFrozen(rules)).toBe(true);
    expect(Object.isFrozen(rules.rules[0])).toBe(true);
    expect(Object.isFrozen(rules.rules[0]!.policy)).toBe(true);
    expect(Object.isFrozen(rules.queues[0]!.handler)).toBe(true);
    expect(() => (rules.rules as unknown[]).push(1)).toThrow();
  });

  it('its version is a hash of the content', () => {
    expect(rules.version).toMatch(/^[0-9a-f]{12}$/);
    expect(parseRules(text, { filename: 'other.yaml' }).version).toBe(rules.version);
    expect(parseRules(text + '# comment\n', { filename: 'x.yaml' }).version).not.toBe(rules.version);
  });

  it('reads the same rules from JSON', () => {
    const json = JSON.stringify({ domains: [{ domain: 'api', descriptors: [{ key: 'ip', rate_limit: { unit: 'minute', requests_per_unit: 5 } }] }] }, null, 2);
    const fromJson = parseRules(json, { filename: 'rules.json' });
    expect(fromJson.rules[0]).toMatchObject({ id: 'api/ip', policy: { algorithm: 'sliding-counter', limit: 5 }, source: { line: 6 } });
  });

  it('an empty mapping is valid and has no rules', () => {
    const empty = parseRules('{}\n', { filename: 'rules.yaml' });
    expect(empty.rules).toEqual([]);
    expect(empty.requestDescriptors({ method: 'GET', path: '/', headers: {}, socketAddress: '127.0.0.1' })).toEqual([]);
  });
});

describe('formatOf', () => {
  it.each([
    ['rules.json', 'x', 'json'],
    ['rules.YAML', '{', 'yaml'],
    ['rules.yml', '{', 'yaml'],
    ['rules', '  {"a":1}', 'json'],
    ['rules', 'a: 1', 'yaml'],
  ] as const)('%s %j -> %s', (file, content, format) => {
    expect(formatOf(file, content)).toBe(format);
  });
});

describe('every problem is reported at once', () => {
  it('a file with problems in every section yields one issue each, in line order', () => {
    const bad = `plans:
  free: { rate_limit: { unit: fortnight, requests_per_unit: 100 } }
domains:
  - domain: api
    descriptors:
      - key: api_key
        rate_limit: { unit: minute, requests_per_unit: -5 }
        colour: blue
      - key: ip
        plan: gold
http:
  domain: web
  trusted_proxies: [banana]
  descriptors: [[ip]]
queues:
  - name: q
    rate_per_second: 1
    capacity: 5
    max_wait: 5 minutes
    handler: { type: http, url: "https://x.example", headers: { Authorization: "Bearer abc" } }
`;
    const { issues, message } = issuesOf(bad);
    expect(issues.map((i) => `${i.line}:${i.column} ${i.path}`)).toEqual([
      '2:31 plans.free.rate_limit.unit',
      '7:56 domains.0.descriptors.0.rate_limit.requests_per_unit',
      '8:9 domains.0.descriptors.0.colour',
      '10:15 domains.0.descriptors.1.plan',
      '12:11 http.domain',
      '13:21 http.trusted_proxies.0',
      '19:15 queues.0.max_wait',
      '20:80 queues.0.handler.headers.Authorization',
    ]);
    expect(message.split('\n')[0]).toBe('invalid rules file rules.yaml: 8 issues');
    expect(message.split('\n')[1]).toBe(
      'rules.yaml:2:31 plans.free.rate_limit.unit: Invalid option: expected one of "second"|"minute"|"hour"|"day"',
    );
  });
});

describe('docs/rules.md', () => {
  it('its complete example is a valid rules file', () => {
    const doc = readFileSync(new URL('../../../docs/rules.md', import.meta.url), 'utf8');
    const example = /## A complete example\s+```yaml\n([\s\S]*?)```/.exec(doc)![1]!;
    const rules = parseRules(example, { filename: 'docs/rules.md' });
    expect(rules.rules.map((r) => r.id)).toEqual(['api/plan=free/api_key', 'api/plan=paid/api_key', 'api/ip', 'api/route=export/api_key', 'api/global']);
    // The walk-through under the example.
    const matched = rules.matchRequest({ method: 'POST', path: '/v1/export', headers: { 'x-api-key': 'k1' }, socketAddress: '203.0.113.7' });
    expect(matched.map((m) => m.rule.name)).toEqual(['api.plan_free.api_key', 'api.ip', 'export-concurrency', 'api.global']);
  });
});
