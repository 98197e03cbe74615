// Rules-file failure family: two things with one name (domains, queues, rule names, sibling
// descriptors). The second is reported, with the line of the first.
import { describe, it } from 'vitest';
import { expectIssue, type FailureCase } from './issues-helper.js';

const handler = '    handler: { type: module, path: ./h.js }\n';
const cases: FailureCase[] = [
  [
    'duplicate domain',
    'domains:\n  - domain: api\n    descriptors: [{ key: ip, unlimited: true }]\n  - domain: api\n    descriptors: [{ key: ip, unlimited: true }]\n',
    'domains.1.domain',
    4,
    "duplicate domain 'api' (first at line 2)",
  ],
  [
    'duplicate queue',
    `queues:\n  - name: payments\n    rate_per_second: 1\n    capacity: 5\n${handler}  - name: payments\n    rate_per_second: 2\n    capacity: 5\n${handler}`,
    'queues.1.name',
    6,
    "duplicate queue 'payments' (first at line 2)",
  ],
  [
    'duplicate rule name',
    'domains:\n  - domain: api\n    descriptors:\n      - key: ip\n        name: limit\n        unlimited: true\n      - key: user\n        name: limit\n        unlimited: true\n',
    'domains.0.descriptors.1.name',
    8,
    "rule name 'limit' is already used (first at line 5)",
  ],
  [
    'a given name equal to a derived one',
    'domains:\n  - domain: api\n    descriptors:\n      - key: ip\n        unlimited: true\n      - key: user\n        name: api.ip\n        unlimited: true\n',
    'domains.0.descriptors.1.name',
    7,
    "rule name 'api.ip' is already used",
  ],
  [
    'derived names that collide',
    'domains:\n  - domain: api\n    descriptors:\n      - key: a\n        value: "b c"\n        unlimited: true\n      - key: a\n        value: "b-c"\n        unlimited: true\n',
    'domains.0.descriptors.1.key',
    7,
    "rule name 'api.a_b-c' is already used; set a distinct name (first at line 4)",
  ],
  [
    'duplicate sibling descriptor',
    'domains:\n  - domain: api\n    descriptors:\n      - key: plan\n        value: free\n        unlimited: true\n      - key: plan\n        value: free\n        rate_limit: { unit: second, requests_per_unit: 1 }\n',
    'domains.0.descriptors.1.key',
    7,
    "duplicate descriptor key 'plan' value 'free' at this level (first at line 4)",
  ],
  [
    'duplicate key-only sibling',
    'domains:\n  - domain: api\n    descriptors:\n      - key: ip\n        unlimited: true\n      - key: ip\n        name: other\n        unlimited: true\n',
    'domains.0.descriptors.1.key',
    6,
    "duplicate descriptor key 'ip' at this level",
  ],
  [
    'a * sibling beside a key-only one (both match any value)',
    'domains:\n  - domain: api\n    descriptors:\n      - key: ip\n        unlimited: true\n      - key: ip\n        value: "*"\n        name: other\n        unlimited: true\n',
    'domains.0.descriptors.1.key',
    6,
    "duplicate descriptor key 'ip' value '*' at this level (first at line 4)",
  ],
];

describe('duplicates are refused at the second occurrence', () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });
});
