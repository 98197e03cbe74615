// Rules-file failure family: trusted proxies that are not networks (bad CIDR, host bits, prefix).
import { describe, it } from 'vitest';
import { DOMAIN, expectIssue, type FailureCase } from './issues-helper.js';

const proxies = (list: string) => `${DOMAIN}http:\n  domain: api\n  trusted_proxies: ${list}\n  descriptors: [[ip]]\n`; // line 8

const cases: FailureCase[] = [
  ['not an address', proxies('[banana]'), 'http.trusted_proxies.0', 8, "'banana' is not an IP address"],
  ['host bits set', proxies('[10.0.0.1/8]'), 'http.trusted_proxies.0', 8, "'10.0.0.1/8' has host bits set below /8 (did you mean 10.0.0.0/8?)"],
  ['IPv4 prefix too long', proxies('[loopback, 10.0.0.0/40]'), 'http.trusted_proxies.1', 8, "prefix '/40' must be an integer from 0 to 32"],
  ['IPv6 prefix too long', proxies('["2001:db8::/200"]'), 'http.trusted_proxies.0', 8, "prefix '/200' must be an integer from 0 to 128"],
  ['two slashes', proxies('[10.0.0.0/8/8]'), 'http.trusted_proxies.0', 8, 'is not a CIDR range'],
  ['a host name', proxies('[localhost]'), 'http.trusted_proxies.0', 8, "'localhost' is not an IP address"],
  ['not a list', proxies('10.0.0.0/8'), 'http.trusted_proxies', 8, 'expected a list, got string'],
  ['IPv4 prefix too short', `${DOMAIN}http:\n  domain: api\n  ipv4_prefix: 4\n  descriptors: [[ip]]\n`, 'http.ipv4_prefix', 8, 'expected number to be >=8'],
];

describe('bad trusted proxy entries are refused one by one', () => {
  it.each(cases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });

  it('each bad entry of one list is its own issue, with its own column', () => {
    const text = proxies('[loopback, banana, 10.0.0.1/8]');
    const a = expectIssue(text, 'http.trusted_proxies.1', 8, "'banana' is not an IP address");
    const b = expectIssue(text, 'http.trusted_proxies.2', 8, 'has host bits set');
    if (a.column >= b.column) throw new Error(`columns ${a.column} and ${b.column} should increase`);
  });
});
