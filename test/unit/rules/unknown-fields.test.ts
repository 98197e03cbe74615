// Rules-file failure family: a field the schema does not know (a typo never silently does
// nothing). One case per place; each names the field's path and the line of its key.
import { describe, expect, it } from 'vitest';
import { DOMAIN, expectIssue, type FailureCase } from './issues-helper.js';

const cases: FailureCase[] = [
  ['at the root', `${DOMAIN}limits: {}\n`, 'limits', 6, 'unknown field'],
  ['in a domain', `domains:\n  - domain: api\n    descriptor: []\n    descriptors: []\n`, 'domains.0.descriptor', 3, 'unknown field'],
  ['in a descriptor node', `${DOMAIN}        colour: blue\n`, 'domains.0.descriptors.0.colour', 6, 'unknown field'],
  ['in a nested node', `domains:\n  - domain: api\n    descriptors:\n      - key: a\n        descriptors:\n          - key: b\n            unlimted: true\n`, 'domains.0.descriptors.0.descriptors.0.unlimted', 7, 'unknown field'],
  ['in rate_limit', `domains:\n  - domain: api\n    descriptors:\n      - key: ip\n        rate_limit: { unit: second, requests_per_unit: 10, per: 1 }\n`, 'domains.0.descriptors.0.rate_limit.per', 5, 'unknown field'],
  ['in a policy block', `domains:\n  - domain: api\n    descriptors:\n      - key: ip\n        policy:\n          algorithm: fixed-window\n          limit: 5\n          window: 1m\n          windowMs: 60000\n`, 'domains.0.descriptors.0.policy.windowMs', 9, 'unknown field'],
  ['in a plan', `plans:\n  free:\n    rate_limit: { unit: minute, requests_per_unit: 5 }\n    price: 0\n`, 'plans.free.price', 4, 'unknown field'],
  ['in http', `${DOMAIN}http:\n  domain: api\n  descriptors: [[ip]]\n  trust_proxy: true\n`, 'http.trust_proxy', 9, 'unknown field'],
  ['in http.user', `${DOMAIN}http:\n  domain: api\n  user: { property: user.id, fallback: anon }\n  descriptors: [[user]]\n`, 'http.user.fallback', 8, 'unknown field'],
  ['in a descriptor entry', `${DOMAIN}http:\n  domain: api\n  descriptors:\n    - [{ key: ip, source: ip, optional: true }]\n`, 'http.descriptors.0.0.optional', 9, 'unknown field'],
  ['in a route group', `route_groups:\n  orders:\n    paths: [/v1/orders]\n    verbs: [GET]\n`, 'route_groups.orders.verbs', 4, 'unknown field'],
  ['in a queue', `queues:\n  - name: q\n    rate_per_second: 1\n    capacity: 5\n    concurrency: 4\n    handler: { type: module, path: ./h.js }\n`, 'queues.0.concurrency', 5, 'unknown field'],
  ['in a handler', `queues:\n  - name: q\n    rate_per_second: 1\n    capacity: 5\n    handler:\n      type: http\n      url: https://api.example.com\n      retries: 3\n`, 'queues.0.handler.retries', 8, 'unknown field'],
  ['in backoff', `queues:\n  - name: q\n    rate_per_second: 1\n    capacity: 5\n    backoff: { type: fixed, delay: 1s, jitter: 0.1 }\n    handler: { type: module, path: ./h.js }\n`, 'queues.0.backoff.jitter', 5, 'unknown field'],
  ['in a header value', `queues:\n  - name: q\n    rate_per_second: 1\n    capacity: 5\n    handler:\n      type: http\n      url: https://api.example.com\n      headers:\n        Authorization: { env: TOKEN, default: abc }\n`, 'queues.0.handler.headers.Authorization.default', 9, 'unknown field'],
];

describe('unknown fields are refused where they are', () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });

  it('the column points at the key', () => {
    const issue = expectIssue(`${DOMAIN}        colour: blue\n`, 'domains.0.descriptors.0.colour', 6, 'unknown field');
    expect(issue.column).toBe(9);
  });
});
