// `sluice check-config FILE`: every error with file:line:col and exit 1, or a readable summary of
// the rules and exit 0.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, cliProcess } from './run-helper.js';

const dir = mkdtempSync(join(tmpdir(), 'sluice-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const write = (name: string, text: string) => {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
};

const GOOD = `plans:
  free: { rate_limit: { unit: minute, requests_per_unit: 100 } }
domains:
  - domain: api
    descriptors:
      - key: plan
        value: free
        descriptors:
          - { key: api_key, plan: free }
      - key: ip
        rate_limit: { unit: second, requests_per_unit: 20 }
        algorithm: fixed-window
        fail_mode: closed
      - key: global
        rate_limit: { unit: second, requests_per_unit: 500 }
        shadow_mode: true
      - key: internal
        unlimited: true
route_groups:
  orders: ["/v1/orders", "/v1/orders/**"]
  export: { paths: [/v1/export], methods: [POST] }
http:
  domain: api
  trusted_proxies: [loopback]
  plan: { header: X-Plan, default: free }
  descriptors: [[plan, api_key], [ip], [{ key: global, value: all }], [{ key: internal, source: "header:X-Internal" }]]
queues:
  - name: payments
    rate_per_second: 5
    capacity: 100
    max_wait: 30s
    handler:
      type: http
      url: https://api.example.com/charge
      headers:
        Authorization: { env: SLUICE_TEST_UNSET_TOKEN_VAR }
  - name: orders
    rate_per_second: 0.5
    capacity: 10
    key: api_key
    quotas:
      - { scope: key, period: day, limit: 500, time_zone: Europe/Berlin }
      - { scope: queue, period: month, unit: cost, limit: 5000, when_exhausted: defer }
    handler: { type: module, path: ./no-such-handler.js }
`;

describe('sluice check-config', () => {
  it('a valid file: a summary of domains, rules with their effective policies, plans, route groups, http and queues', async () => {
    const file = write('good.yaml', GOOD);
    const r = await cli('check-config', file);
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const version = /version ([0-9a-f]{12})/.exec(r.stdout)![1];
    expect(r.stdout).toBe(
      [
        `${file}: valid (version ${version})`,
        '',
        'domain api (4 rules)',
        '  api/plan=free/api_key  [api.plan_free.api_key] (line 9)',
        '      plan free: sliding-counter 100 per 1m; fail open, timeout 200ms',
        '  api/ip  [api.ip] (line 10)',
        '      fixed-window 20 per 1s; fail closed, timeout 200ms',
        '  api/global  [api.global] (shadow mode, line 14)',
        '      sliding-counter 500 per 1s; fail open, timeout 200ms',
        '  api/internal  [api.internal] (line 17)',
        '      unlimited',
        '',
        'plans',
        '  free  sliding-counter 100 per 1m; fail open, timeout 200ms',
        '',
        'route groups',
        '  orders  /v1/orders, /v1/orders/**',
        '  export  /v1/export  [POST]',
        '',
        'http (domain api)',
        '  trusted proxies: loopback',
        '  client networks (one per-IP client): IPv4 /32 (default), IPv6 /56 (default); API key header X-API-Key (hashed)',
        '  descriptors: [plan, api_key] [ip] [global=all] [internal<-header:X-Internal]',
        '',
        'queues',
        '  payments: 5/s per key, capacity 100, max wait 30s, key from body',
        '      handler http POST https://api.example.com/charge (timeout 10s; headers Authorization from $SLUICE_TEST_UNSET_TOKEN_VAR)',
        '  orders: 0.5/s per key, capacity 10, key from api_key',
        `      handler module ${join(dir, 'no-such-handler.js')}`,
        '      quota 500 calls per key per day (Europe/Berlin), refuse',
        '      quota 5000 cost per queue per month (UTC), defer',
        '',
        'warnings',
        '  queue payments: environment variable SLUICE_TEST_UNSET_TOKEN_VAR is not set here',
        `  queue orders: handler module ${join(dir, 'no-such-handler.js')} does not exist`,
        '',
      ].join('\n'),
    );
  });

  it('an invalid file: every error as file:line:col path: message, and exit 1', async () => {
    const file = write(
      'bad.yaml',
      `domains:
  - domain: api
    descriptors:
      - key: ip
        rate_limit: { unit: fortnight, requests_per_unit: -1 }
        colour: blue
      - key: user
        plan: gold
`,
    );
    const r = await cli('check-config', file);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      [
        `${file}:5:29 domains.0.descriptors.0.rate_limit.unit: Invalid option: expected one of "second"|"minute"|"hour"|"day"`,
        `${file}:5:59 domains.0.descriptors.0.rate_limit.requests_per_unit: Too small: expected number to be >0`,
        `${file}:6:9 domains.0.descriptors.0.colour: unknown field`,
        `${file}:8:15 domains.0.descriptors.1.plan: unknown plan 'gold' (no plans are defined)`,
        `${file}: 4 errors`,
        '',
      ].join('\n'),
    );
  });

  it('a JSON syntax error names its line', async () => {
    const file = write('bad.json', '{\n  "domains": [\n    { "domain": "api", }\n  ]\n}\n');
    const r = await cli('check-config', file);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`${file}:3:24 (syntax): JSON syntax error: expected a double-quoted property name, found '}'\n${file}: 1 error\n`);
  });

  it('a missing file is an error too', async () => {
    const file = join(dir, 'missing.yaml');
    const r = await cli('check-config', file);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${file}:1:1 (file): cannot read the file: ENOENT`);
  });

  it('--json for scripts', async () => {
    const ok = JSON.parse((await cli('check-config', write('good2.yaml', GOOD), '--json')).stdout) as { valid: boolean; rules: { id: string; policy: unknown }[] };
    expect(ok.valid).toBe(true);
    expect(ok.rules.map((r) => r.id)).toEqual(['api/plan=free/api_key', 'api/ip', 'api/global', 'api/internal']);
    const badRun = await cli('check-config', write('bad2.yaml', 'domains: 5\n'), '--json');
    expect(badRun.code).toBe(1);
    expect(JSON.parse(badRun.stdout)).toEqual({
      valid: false,
      file: join(dir, 'bad2.yaml'),
      issues: [{ path: 'domains', line: 1, column: 10, message: 'expected a list, got number' }],
    });
  });

  it('as a process: exit codes 0 and 1', () => {
    const good = cliProcess(['check-config', write('good3.yaml', GOOD)]);
    expect(good.code).toBe(0);
    expect(good.stdout).toContain('domain api (4 rules)');
    const bad = cliProcess(['check-config', write('bad3.yaml', 'domains: [{ domain: api, descriptors: [], extra: 1 }]\n')]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('bad3.yaml:1:43 domains.0.extra: unknown field');
  });
});
