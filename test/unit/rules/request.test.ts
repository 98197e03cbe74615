// The http section: a request (a small plain object, no express) becomes descriptors through its
// identity sources; API keys are always hashed; spoofed headers change nothing.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { RequestInfo } from '../../../src/request/request-info.js';
import { parseRules } from '../../../src/rules/rules.js';

const RULES_TEXT = `domains:
  - domain: api
    descriptors:
      - key: api_key
        rate_limit: { unit: minute, requests_per_unit: 100 }
      - key: ip
        rate_limit: { unit: second, requests_per_unit: 20 }
      - key: user
        rate_limit: { unit: second, requests_per_unit: 2 }
      - key: plan
        value: paid
        descriptors:
          - { key: api_key, rate_limit: { unit: minute, requests_per_unit: 1000 } }
      - key: plan
        value: free
        descriptors:
          - { key: api_key, rate_limit: { unit: minute, requests_per_unit: 10 } }
      - key: route
        value: orders
        descriptors:
          - { key: method, value: POST, rate_limit: { unit: second, requests_per_unit: 1 } }
      - key: tenant
        rate_limit: { unit: second, requests_per_unit: 50 }
      - key: auth
        rate_limit: { unit: second, requests_per_unit: 50 }
      - key: global
        rate_limit: { unit: second, requests_per_unit: 500 }
route_groups:
  orders: ["/v1/orders", "/v1/orders/**"]
http:
  domain: api
  trusted_proxies: [loopback, 10.0.0.0/8]
  ipv6_prefix: 64
  user: { property: user.id }
  plan: { header: X-Plan, default: free }
  descriptors:
    - [api_key]
    - [ip]
    - [user]
    - [plan, api_key]
    - [route, method]
    - [{ key: tenant, source: "header:X-Tenant" }]
    - [{ key: auth, source: "header:Authorization" }]
    - [{ key: global, value: all }]
`;
const rules = parseRules(RULES_TEXT, { filename: 'rules.yaml' });

const sha = (v: string) => createHash('sha256').update(v).digest('base64url').slice(0, 22);
const req = (over: Partial<RequestInfo> = {}): RequestInfo => ({ method: 'GET', path: '/v1/things', headers: {}, socketAddress: '203.0.113.7', ...over });
const text = (r: RequestInfo) => rules.requestDescriptors(r).map((d) => d.map((x) => `${x.key}=${x.value}`).join(','));

describe('requestDescriptors', () => {
  it('a bare request: ip, default plan needs an API key, so only the sources that have values', () => {
    expect(text(req())).toEqual(['ip=203.0.113.7', 'global=all']);
  });

  it('the API key is hashed, never passed on raw', () => {
    const out = text(req({ headers: { 'x-api-key': 'sk_live_secret' } }));
    expect(out).toEqual([`api_key=${sha('sk_live_secret')}`, 'ip=203.0.113.7', `plan=free,api_key=${sha('sk_live_secret')}`, 'global=all']);
    expect(JSON.stringify(out)).not.toContain('sk_live_secret');
  });

  it('uses the hash function it is given (an HMAC secret)', () => {
    const out = rules.requestDescriptors(req({ headers: { 'x-api-key': 'k' } }), { hash: (v) => `h(${v})` });
    expect(out[0]).toEqual([{ key: 'api_key', value: 'h(k)' }]);
  });

  it('the user comes from the authenticated request, not from a header', () => {
    expect(text(req({ user: { id: 42 } }))).toContain('user=42');
    expect(text(req({ headers: { 'x-user-id': 'admin' } })).some((d) => d.startsWith('user='))).toBe(false);
  });

  it('the plan header counts only from a trusted proxy; otherwise the default', () => {
    const fromClient = text(req({ headers: { 'x-api-key': 'k', 'x-plan': 'paid' } }));
    expect(fromClient).toContain(`plan=free,api_key=${sha('k')}`);
    const fromGateway = text(req({ socketAddress: '10.0.0.2', headers: { 'x-api-key': 'k', 'x-plan': 'paid' } }));
    expect(fromGateway).toContain(`plan=paid,api_key=${sha('k')}`);
  });

  it('spoofing: an untrusted peer sending X-Forwarded-For keeps its own address', () => {
    expect(text(req({ headers: { 'x-forwarded-for': '1.2.3.4' } }))).toContain('ip=203.0.113.7');
    expect(text(req({ socketAddress: '10.0.0.2', headers: { 'x-forwarded-for': '6.6.6.6, 198.51.100.9' } }))).toContain('ip=198.51.100.9');
  });

  it('IPv6 clients are grouped by /56 when ipv6_prefix is not set', () => {
    const defaults = parseRules(
      `domains:
  - domain: api
    descriptors:
      - key: ip
        rate_limit: { unit: second, requests_per_unit: 20 }
http:
  domain: api
  descriptors: [[ip]]
`,
      { filename: 'defaults.yaml' },
    );
    expect(defaults.http).toMatchObject({ ipv4Prefix: 32, ipv6Prefix: 56 });
    const ip = (socketAddress: string) => defaults.requestDescriptors(req({ socketAddress }))[0];
    expect(ip('2001:db8:1:2::1')).toEqual([{ key: 'ip', value: '2001:db8:1::/56' }]);
    expect(ip('2001:db8:1:ff:1::1')).toEqual(ip('2001:db8:1:2::1'));
    expect(ip('2001:db8:1:100::1')).toEqual([{ key: 'ip', value: '2001:db8:1:100::/56' }]);
  });

  it('IPv6 clients are grouped by the configured ipv6_prefix (64 in this file)', () => {
    const a = text(req({ socketAddress: '2001:db8:1:2::1' }));
    const b = text(req({ socketAddress: '2001:db8:1:2:ffff:1:2:3' }));
    expect(a).toContain('ip=2001:db8:1:2::/64');
    expect(b).toEqual(a);
  });

  it('route aliases are one route group; method is upper case', () => {
    for (const path of ['/v1/orders', '/v1/Orders/', '/v1//orders', '/v1/orders%2F', '/v1/./orders?x=1']) {
      expect(text(req({ method: 'post', path }))).toContain('route=orders,method=POST');
    }
    expect(text(req({ method: 'POST', path: '/v1/other' })).some((d) => d.startsWith('route='))).toBe(false);
  });

  it('header sources: first value, trimmed; credential-looking headers hashed', () => {
    expect(text(req({ headers: { 'x-tenant': [' acme ', 'other'] } }))).toContain('tenant=acme');
    expect(text(req({ headers: { authorization: 'Bearer t0k3n' } }))).toContain(`auth=${sha('Bearer t0k3n')}`);
    expect(text(req({ headers: { 'x-tenant': '   ' } })).some((d) => d.startsWith('tenant='))).toBe(false);
  });

  it('matchRequest pairs each descriptor with its rule', () => {
    const matched = rules.matchRequest(req({ method: 'POST', path: '/v1/orders/', headers: { 'x-api-key': 'k' }, user: { id: 'u1' } }));
    expect(matched.map((m) => m.rule.id)).toEqual([
      'api/api_key',
      'api/ip',
      'api/user',
      'api/plan=free/api_key',
      'api/route=orders/method=POST',
      'api/global',
    ]);
    expect(matched.every((m) => m.domain === 'api')).toBe(true);
    expect(rules.routeOf('GET', '/V1/ORDERS/7')).toBe('orders');
  });
});

describe('user and plan from other sources', () => {
  const r = parseRules(
    `domains:
  - domain: d
    descriptors:
      - { key: user, rate_limit: { unit: second, requests_per_unit: 1 } }
      - { key: plan, rate_limit: { unit: second, requests_per_unit: 1 } }
      - { key: h, rate_limit: { unit: second, requests_per_unit: 1 } }
http:
  domain: d
  user: { header: X-User-Id }
  plan: { property: user.plan }
  descriptors: [[user], [plan], [{ key: h, source: "header:X-Tenant", hash: true }]]
`,
    { filename: 'r.yaml' },
  );
  const run = (over: Partial<RequestInfo>) =>
    r.requestDescriptors({ method: 'GET', path: '/', headers: {}, socketAddress: '127.0.0.1', ...over }).map((d) => d.map((x) => `${x.key}=${x.value}`).join(','));

  it('a user header is not believed without trusted proxies', () => {
    expect(run({ headers: { 'x-user-id': 'alice' } })).toEqual([]);
  });

  it('plan from a property; hash: true hashes a header value', () => {
    expect(run({ user: { plan: 'paid' }, headers: { 'X-Tenant': 'acme' } })).toEqual(['plan=paid', `h=${sha('acme')}`]);
  });

  it('require_trusted_peer: false reads the header from anyone', () => {
    const open = parseRules(
      `domains: [{ domain: d, descriptors: [{ key: user, rate_limit: { unit: second, requests_per_unit: 1 } }] }]
http: { domain: d, user: { header: X-User-Id, require_trusted_peer: false }, descriptors: [[user]] }
`,
      { filename: 'r.yaml' },
    );
    expect(open.requestDescriptors({ method: 'GET', path: '/', headers: { 'x-user-id': 'alice' }, socketAddress: '203.0.113.7' })).toEqual([[{ key: 'user', value: 'alice' }]]);
  });
});

describe('the memo of the client network and the route group', () => {
  // One compiled rules object remembers each address's network and each path's group: whatever came
  // before, a request gets what a freshly compiled copy (no memory) gives it.
  const fresh = () => parseRules(RULES_TEXT, { filename: 'rules.yaml' });
  const requests: RequestInfo[] = [
    req(),
    req({ socketAddress: '127.0.0.1', headers: { 'x-forwarded-for': '198.51.100.9' } }),
    req({ socketAddress: '127.0.0.1', headers: { 'x-forwarded-for': '198.51.100.10, 10.1.2.3' } }),
    req({ socketAddress: '127.0.0.1' }),
    req({ socketAddress: '127.0.0.1', headers: { 'x-forwarded-for': ['198.51.100.11', '10.0.0.1'] } }),
    req({ socketAddress: '203.0.113.7', headers: { 'x-forwarded-for': '198.51.100.9' } }),
    req({ socketAddress: undefined }),
    req({ socketAddress: '2001:db8::1' }),
    req({ socketAddress: '2001:db8::2' }),
    req({ method: 'POST', path: '/v1/orders' }),
    req({ method: 'post', path: '/v1/orders/7?x=1' }),
    req({ method: 'POST', path: '/v1/order' }),
    req({ method: 'GET', path: '/v1/orders' }),
  ];
  it('answers every request as a compiled copy without memory does, in any order', () => {
    const expected = requests.map((r) => fresh().requestDescriptors(r));
    for (let round = 0; round < 3; round++) {
      const order = requests.map((_, i) => i);
      if (round === 1) order.reverse();
      if (round === 2) order.sort((a, b) => ((a * 7) % 13) - ((b * 7) % 13));
      for (const i of order) expect(rules.requestDescriptors(requests[i]!)).toEqual(expected[i]);
    }
  });
});
