// Rules.matchRequest keeps each client's matches (a memo keyed by its sources' values and the hash of
// secrets): whatever the values, in whatever order requests come, it answers exactly what matching
// the request's descriptors afresh answers, identities included, and two hash functions never share.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RequestInfo } from '../../../src/request/request-info.js';
import { descriptorIdentity } from '../../../src/rules/descriptor.js';
import { parseRules } from '../../../src/rules/rules.js';

const rules = parseRules(
  `domains:
  - domain: api
    descriptors:
      - key: api_key
        rate_limit: { unit: minute, requests_per_unit: 100 }
      - key: user
        rate_limit: { unit: second, requests_per_unit: 2 }
        descriptors:
          - { key: team, rate_limit: { unit: second, requests_per_unit: 5 } }
      - key: team
        value: "a*"
        rate_limit: { unit: second, requests_per_unit: 7 }
      - key: route
        value: orders
        rate_limit: { unit: second, requests_per_unit: 9 }
route_groups:
  orders: ["/v1/orders", "/v1/orders/**"]
http:
  domain: api
  user: { property: user.id }
  descriptors:
    - [api_key]
    - [user]
    - [user, { key: team, source: "header:X-Team" }]
    - [{ key: team, source: "header:X-Team" }]
    - [route]
`,
  { filename: 'memo.yaml' },
);

/** The matches of `r`, worked out afresh from its descriptors (no memo). */
function fresh(r: RequestInfo, hash?: (v: string) => string) {
  return rules
    .requestDescriptors(r, hash ? { hash } : {})
    .map((entries) => ({ entries, rule: rules.matchDescriptor('api', entries) }))
    .filter((m) => m.rule)
    .map(({ entries, rule }) => ({ domain: 'api', entries, rule, identity: descriptorIdentity(entries) }));
}

// Values that a naive join could confuse: separators, digits and colons, empty strings.
const value = fc.option(fc.oneof(fc.constantFrom('', ':', '1:', '1:a', 'a', 'a:1', 'ab', '2:ab', '-', 'a-'), fc.string({ maxLength: 6 })), { nil: undefined });
const request = fc.record({ user: value, team: value, key: value, orders: fc.boolean() }).map(
  ({ user, team, key, orders }): RequestInfo => ({
    method: 'GET',
    path: orders ? '/v1/orders/7' : '/v1/things',
    headers: { ...(team === undefined ? {} : { 'x-team': team }), ...(key === undefined ? {} : { 'x-api-key': key }) },
    socketAddress: '203.0.113.7',
    ...(user === undefined ? {} : { user: { id: user } }),
  }),
);

describe('Rules.matchRequest memo', () => {
  it('answers what matching afresh answers, request after request', () => {
    fc.assert(
      fc.property(fc.array(request, { minLength: 1, maxLength: 60 }), (requests) => {
        // Each request twice, interleaved: the second reading comes from the memo.
        for (const r of [...requests, ...requests.reverse()]) expect(rules.matchRequest(r)).toEqual(fresh(r));
      }),
    );
  });

  it('keeps hash functions apart, and its answers cannot be changed by a caller', () => {
    const r: RequestInfo = { method: 'GET', path: '/', headers: { 'x-api-key': 'secret' }, socketAddress: '203.0.113.7' };
    const h1 = (v: string) => `one(${v.length})`;
    const h2 = (v: string) => `two(${v.length})`;
    expect(rules.matchRequest(r, { hash: h1 })[0]!.identity).toBe('api_key=one(6)');
    expect(rules.matchRequest(r, { hash: h2 })[0]!.identity).toBe('api_key=two(6)');
    expect(rules.matchRequest(r, { hash: h1 })).toEqual(fresh(r, h1));
    const m = rules.matchRequest(r, { hash: h1 });
    expect(Object.isFrozen(m) && Object.isFrozen(m[0]) && Object.isFrozen(m[0]!.entries)).toBe(true);
  });
});
