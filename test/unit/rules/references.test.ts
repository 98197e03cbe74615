// Rules-file failure family: a reference to something the file does not define (a plan, the
// http domain, a source whose configuration is missing).
import { describe, it } from 'vitest';
import { DOMAIN, expectIssue, type FailureCase } from './issues-helper.js';

const httpWith = (lines: string) => `${DOMAIN}http:\n  domain: api\n${lines}`; // http fields from line 8

const cases: FailureCase[] = [
  [
    'unknown plan',
    'plans:\n  free: { rate_limit: { unit: minute, requests_per_unit: 100 } }\ndomains:\n  - domain: api\n    descriptors:\n      - key: api_key\n        plan: gold\n',
    'domains.0.descriptors.0.plan',
    7,
    "unknown plan 'gold' (plans: free)",
  ],
  ['plan with no plans defined', 'domains:\n  - domain: api\n    descriptors:\n      - key: api_key\n        plan: free\n', 'domains.0.descriptors.0.plan', 5, "unknown plan 'free' (no plans are defined)"],
  ['http domain not defined', `${DOMAIN}http:\n  domain: web\n  descriptors: [[ip]]\n`, 'http.domain', 7, "no domain 'web' in domains"],
  ['http domain without any domains', 'http:\n  domain: api\n  descriptors: [[ip]]\n', 'http.domain', 2, "no domain 'api' in domains"],
  ['route source without route groups', httpWith('  descriptors:\n    - [route, ip]\n'), 'http.descriptors.0.0', 9, 'source route needs route_groups'],
  ['user source without http.user', httpWith('  descriptors:\n    - [{ key: uid, source: user }]\n'), 'http.descriptors.0.0', 9, 'source user needs http.user'],
  ['plan source without http.plan', httpWith('  descriptors:\n    - [ip]\n    - [plan, api_key]\n'), 'http.descriptors.1.0', 10, 'source plan needs http.plan'],
];

describe('references to undefined things are refused where they are made', () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });
});
