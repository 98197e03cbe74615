// Rules-file failure family: a known field with a bad value (wrong unit, negative or fractional
// rate, unknown algorithm, bad name, ...). One case per failure mode, each with its path and line.
import { describe, it } from 'vitest';
import { DOMAIN, expectIssue, type FailureCase } from './issues-helper.js';

/** A node `key: ip` whose further fields start on line 5. */
const node = (fields: string) => `domains:\n  - domain: api\n    descriptors:\n      - key: ip\n${fields}`;
const N = 'domains.0.descriptors.0';
const httpWith = (lines: string) => `${DOMAIN}http:\n  domain: api\n${lines}`; // http fields from line 8

const cases: FailureCase[] = [
  ['bad unit', node('        rate_limit: { unit: fortnight, requests_per_unit: 5 }\n'), `${N}.rate_limit.unit`, 5, 'expected one of "second"|"minute"|"hour"|"day"'],
  ['negative rate', node('        rate_limit: { unit: second, requests_per_unit: -5 }\n'), `${N}.rate_limit.requests_per_unit`, 5, 'expected number to be >0'],
  ['zero rate', node('        rate_limit: { unit: second, requests_per_unit: 0 }\n'), `${N}.rate_limit.requests_per_unit`, 5, 'expected number to be >0'],
  ['fractional rate', node('        rate_limit: { unit: second, requests_per_unit: 2.5 }\n'), `${N}.rate_limit.requests_per_unit`, 5, 'expected int'],
  ['rate as text', node("        rate_limit: { unit: second, requests_per_unit: '5' }\n"), `${N}.rate_limit.requests_per_unit`, 5, 'expected number, got string'],
  ['missing rate', node('        rate_limit: { unit: second }\n'), `${N}.rate_limit.requests_per_unit`, 5, 'required field is missing'],
  ['unknown algorithm', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        algorithm: adaptive\n'), `${N}.algorithm`, 6, 'Invalid option'],
  ['concurrency as a rate algorithm', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        algorithm: concurrency\n'), `${N}.algorithm`, 6, 'Invalid option'],
  ['bad fail mode', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        fail_mode: maybe\n'), `${N}.fail_mode`, 6, 'expected one of "open"|"closed"'],
  ['shadow mode not boolean', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        shadow_mode: yes\n'), `${N}.shadow_mode`, 6, 'expected boolean, got string'],
  ['bad rule name', node('        rate_limit: { unit: second, requests_per_unit: 5 }\n        name: per ip\n'), `${N}.name`, 6, 'letters, digits'],
  ['bad descriptor key', `domains:\n  - domain: api\n    descriptors:\n      - key: "api key"\n        unlimited: true\n`, `${N}.key`, 4, 'letters, digits'],
  ['wildcard not at the end', node('        value: "a*b"\n        unlimited: true\n'), `${N}.value`, 5, 'only a trailing * is a wildcard'],
  ['empty value', node("        value: ''\n        unlimited: true\n"), `${N}.value`, 5, 'must not be empty'],
  ['bad domain name', `domains:\n  - domain: "my api"\n    descriptors: []\n`, 'domains.0.domain', 2, 'letters, digits'],
  ['descriptors not a list', `domains:\n  - domain: api\n    descriptors: { key: ip }\n`, 'domains.0.descriptors', 3, 'expected a list, got object'],
  ['policy algorithm unknown', node('        policy: { algorithm: adaptive, limit: 5 }\n'), `${N}.policy.algorithm`, 5, 'Invalid option'],
  ['policy rate negative', node('        policy: { algorithm: token-bucket, capacity: 5, refill_per_second: -1 }\n'), `${N}.policy.refill_per_second`, 5, 'expected number to be >0'],
  ['ipv6 prefix out of range', httpWith('  ipv6_prefix: 129\n  descriptors: [[ip]]\n'), 'http.ipv6_prefix', 8, 'expected number to be <=128'],
  ['bad api key header name', httpWith('  api_key_header: "X API Key"\n  descriptors: [[api_key]]\n'), 'http.api_key_header', 8, 'not a valid header name'],
  ['unknown source', httpWith('  descriptors:\n    - [{ key: who, source: cookie }]\n'), 'http.descriptors.0.0.source', 9, 'must be one of api_key, user, ip, route, method, plan or header:<Name>'],
  ['unknown shorthand source', httpWith('  descriptors:\n    - [ip, tenant]\n'), 'http.descriptors.0.1.source', 9, 'must be one of'],
  ['entry with source and value', httpWith('  descriptors:\n    - [{ key: g, source: ip, value: all }]\n'), 'http.descriptors.0.0', 9, 'give exactly one of source or value'],
  ['empty descriptor template', httpWith('  descriptors:\n    - []\n'), 'http.descriptors.0', 9, 'a descriptor needs at least one entry'],
  ['no descriptor templates', httpWith('  descriptors: []\n'), 'http.descriptors', 8, 'give at least one descriptor template'],
  ['user with property and header', httpWith('  user: { property: user.id, header: X-User }\n  descriptors: [[user]]\n'), 'http.user', 8, 'give exactly one of property or header'],
  ['bad property path', httpWith('  user: { property: "user[0].id" }\n  descriptors: [[user]]\n'), 'http.user.property', 8, 'a dotted property path'],
  ['plan with nothing to read', httpWith('  plan: { require_trusted_peer: false }\n  descriptors: [[plan]]\n'), 'http.plan', 8, 'give property, header or default'],
  ['route pattern without a slash', 'route_groups:\n  orders: [v1/orders]\n', 'route_groups.orders.paths.0', 2, "must start with '/'"],
  ['route ** in the middle', 'route_groups:\n  orders: ["/v1/**/x"]\n', 'route_groups.orders.paths.0', 2, "'**' may only be the last segment"],
  ['route group without paths', 'route_groups:\n  orders: []\n', 'route_groups.orders.paths', 2, 'give at least one path pattern'],
  ['bad route method', 'route_groups:\n  orders: { paths: [/v1/orders], methods: ["GET /"] }\n', 'route_groups.orders.methods.0', 2, 'an HTTP method'],
];

describe('bad values are refused with their path and line', () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });
});
