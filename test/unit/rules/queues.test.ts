// Rules-file failure family: queues (missing handler, literal secrets, bad handler, bad numbers).
import { describe, expect, it } from 'vitest';
import { expectIssue, issuesOf, type FailureCase } from './issues-helper.js';

/** A queue `q` whose further fields start on line 5. */
const queue = (fields: string) => `queues:\n  - name: q\n    rate_per_second: 1\n    capacity: 5\n${fields}`;
const http = (lines: string) => queue(`    handler:\n      type: http\n      url: https://api.example.com/v1\n${lines}`); // handler lines from 8
const Q = 'queues.0';

const cases: FailureCase[] = [
  ['missing handler', queue(''), `${Q}.handler`, 2, 'required field is missing'],
  ['unknown handler type', queue('    handler: { type: lambda, path: x }\n'), `${Q}.handler.type`, 5, "type must be 'http' or 'module'"],
  ['http handler without url', queue('    handler: { type: http }\n'), `${Q}.handler.url`, 5, 'required field is missing'],
  ['relative url', queue('    handler: { type: http, url: /v1/charge }\n'), `${Q}.handler.url`, 5, 'an absolute http:// or https:// URL'],
  ['non-http url', queue('    handler: { type: http, url: "ftp://files.example.com" }\n'), `${Q}.handler.url`, 5, 'an absolute http:// or https:// URL'],
  ['bad method', http('      method: FETCH\n'), `${Q}.handler.method`, 8, 'Invalid option'],
  ['literal Authorization', http('      headers:\n        Authorization: "Bearer sk_live_123"\n'), `${Q}.handler.headers.Authorization`, 9, "a literal value for credential header 'Authorization' is refused: use { env: VARIABLE_NAME }"],
  ['literal API key header', http('      headers:\n        X-Api-Key: abc123\n'), `${Q}.handler.headers.X-Api-Key`, 9, 'a literal value for credential header'],
  ['literal token header', http('      headers:\n        X-Auth-Token: abc123\n'), `${Q}.handler.headers.X-Auth-Token`, 9, 'a literal value for credential header'],
  ['literal cookie', http('      headers:\n        Cookie: "session=1"\n'), `${Q}.handler.headers.Cookie`, 9, 'a literal value for credential header'],
  ['bad env name', http('      headers:\n        Authorization: { env: "my token" }\n'), `${Q}.handler.headers.Authorization.env`, 9, 'an environment variable name'],
  ['bad header name', http('      headers:\n        "Bad Header": { env: X }\n'), `${Q}.handler.headers.Bad Header`, 9, "bad name 'Bad Header': not a valid header name"],
  ['module without path', queue('    handler: { type: module }\n'), `${Q}.handler.path`, 5, 'required field is missing'],
  ['zero rate', queue('    rate_per_second: 0\n    handler: { type: module, path: ./h.js }\n').replace('    rate_per_second: 1\n', ''), `${Q}.rate_per_second`, 4, 'expected number to be >0'],
  ['fractional capacity', `queues:\n  - name: q\n    rate_per_second: 1\n    capacity: 2.5\n    handler: { type: module, path: ./h.js }\n`, `${Q}.capacity`, 4, 'expected int'],
  ['missing capacity', `queues:\n  - name: q\n    rate_per_second: 1\n    handler: { type: module, path: ./h.js }\n`, `${Q}.capacity`, 2, 'required field is missing'],
  ['bad key source', queue('    key: cookie\n    handler: { type: module, path: ./h.js }\n'), `${Q}.key`, 5, 'must be one of tenant, body, api_key, user, ip or header:<Name>'],
  ['bad queue name', `queues:\n  - name: "pay ments"\n    rate_per_second: 1\n    capacity: 5\n    handler: { type: module, path: ./h.js }\n`, `${Q}.name`, 2, 'letters, digits'],
  ['bad backoff type', queue('    backoff: { type: linear, delay: 1s }\n    handler: { type: module, path: ./h.js }\n'), `${Q}.backoff.type`, 5, 'expected one of "fixed"|"exponential"'],
];

describe('bad queues are refused with their path and line', () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });

  it('literal values are fine for headers that carry no credential, and env refs for any', () => {
    expect(() => issuesOf(http('      headers:\n        Accept: application/json\n        Authorization: { env: TOKEN }\n'))).toThrow('parsed');
  });
});
