// Client IP resolution: X-Forwarded-For counts only through trusted proxies (spoofing is
// impossible from an untrusted peer), and per-IP limits group IPv6 by /56 (one customer's delegation).
import { describe, expect, it } from 'vitest';
import { checkTrustedProxy, clientNetwork, resolveClientIp, TrustedProxies } from '../../../src/request/identity.js';
import { formatIp, parseIp } from '../../../src/request/ip.js';

const proxies = TrustedProxies.from(['loopback', '10.0.0.0/8', '2001:db8:ffff::/48']);
const client = (peer: string | undefined, xff?: string | string[], trusted = proxies) => {
  const ip = resolveClientIp(peer, xff, trusted);
  return ip ? formatIp(ip) : undefined;
};

describe('resolveClientIp', () => {
  it('an untrusted peer cannot change its address with X-Forwarded-For', () => {
    expect(client('203.0.113.7', '1.2.3.4')).toBe('203.0.113.7');
    expect(client('203.0.113.7', '10.0.0.5, 127.0.0.1')).toBe('203.0.113.7');
    expect(client('2001:db8:1::9', '1.2.3.4')).toBe('2001:db8:1::9');
  });

  it('with no trusted proxies the header is ignored even from loopback', () => {
    expect(client('127.0.0.1', '1.2.3.4', TrustedProxies.none)).toBe('127.0.0.1');
  });

  it('a trusted peer: the rightmost untrusted hop is the client, hops to its left are not believed', () => {
    expect(client('10.0.0.2', '198.51.100.9')).toBe('198.51.100.9');
    // The client wrote "6.6.6.6" itself; our proxy appended the real peer 198.51.100.9.
    expect(client('10.0.0.2', '6.6.6.6, 198.51.100.9')).toBe('198.51.100.9');
    // Two trusted proxies in a chain.
    expect(client('127.0.0.1', '6.6.6.6, 198.51.100.9, 10.1.2.3')).toBe('198.51.100.9');
  });

  it('reads several header lines as one list and tolerates ports, brackets and spaces', () => {
    expect(client('10.0.0.2', ['6.6.6.6', ' 198.51.100.9:4711 , 10.0.0.3'])).toBe('198.51.100.9');
    expect(client('::1', '[2001:db8:1::7]:443')).toBe('2001:db8:1::7');
  });

  it('normalises an IPv4-mapped peer before checking trust', () => {
    expect(client('::ffff:10.0.0.2', '198.51.100.9')).toBe('198.51.100.9');
    expect(client('::ffff:203.0.113.7', '1.2.3.4')).toBe('203.0.113.7');
  });

  it('every hop trusted: the leftmost one is as far as the chain goes', () => {
    expect(client('10.0.0.2', '10.9.9.9, 10.0.0.3')).toBe('10.9.9.9');
  });

  it('a hop that is not an address stops at the last trusted hop', () => {
    expect(client('10.0.0.2', '198.51.100.9, garbage')).toBe('10.0.0.2');
    expect(client('10.0.0.2', 'garbage, 10.0.0.3')).toBe('10.0.0.3');
  });

  it('no header, or no socket address', () => {
    expect(client('10.0.0.2')).toBe('10.0.0.2');
    expect(client(undefined, '1.2.3.4')).toBeUndefined();
    expect(client('not-an-ip', '1.2.3.4')).toBeUndefined();
  });

  it('trusts IPv6 proxy ranges', () => {
    expect(client('2001:db8:ffff:1::1', '2001:db8:1:2::5')).toBe('2001:db8:1:2::5');
  });
});

describe('checkTrustedProxy', () => {
  it.each([
    ['loopback', undefined],
    ['uniquelocal', undefined],
    ['10.0.0.0/8', undefined],
    ['::1', undefined],
    ['10.0.0.1/8', "'10.0.0.1/8' has host bits set below /8 (did you mean 10.0.0.0/8?)"],
    ['localhost', "'localhost' is not an IP address"],
  ])('%s', (entry, problem) => {
    expect(checkTrustedProxy(entry)).toBe(problem);
  });

  it('TrustedProxies.from refuses a bad entry', () => {
    expect(() => TrustedProxies.from(['10.0.0.0/8', 'nope'])).toThrow("trusted proxy 'nope' is not an IP address");
  });
});

describe('clientNetwork', () => {
  const net = (raw: string, grouping?: Parameters<typeof clientNetwork>[1]) => clientNetwork(parseIp(raw)!, grouping);

  it('IPv4 is the address itself by default', () => {
    expect(net('203.0.113.7')).toBe('203.0.113.7');
    expect(net('::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('IPv6 is grouped by /56 by default: every address of one customer delegation is one client', () => {
    expect(net('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1::/56');
    expect(net('2001:db8:1:2::1')).toBe(net('2001:db8:1:2:ffff::9'));
    expect(net('2001:db8:1:2ab::1')).toBe('2001:db8:1:200::/56');
    // The next /56 is another client.
    expect(net('2001:db8:1:100::1')).toBe('2001:db8:1:100::/56');
    expect(net('2001:db8:1:100::1')).not.toBe(net('2001:db8:1:ff::1'));
  });

  it('a client rotating through all 256 /64s of its /56 stays one client (issue 8, defect 6)', () => {
    const networks = new Set<string>();
    for (let i = 0; i < 256; i++) networks.add(net(`2001:db8:1:2${i.toString(16).padStart(2, '0')}::${(i + 1).toString(16)}`));
    expect([...networks]).toEqual(['2001:db8:1:200::/56']);
  });

  it('ipv6Prefix 64 groups per /64, as before the default changed', () => {
    expect(net('2001:db8:1:2:aaaa:bbbb:cccc:dddd', { ipv6Prefix: 64 })).toBe('2001:db8:1:2::/64');
    expect(net('2001:db8:1:3::1', { ipv6Prefix: 64 })).not.toBe(net('2001:db8:1:2::1', { ipv6Prefix: 64 }));
  });

  it('prefixes are configurable', () => {
    expect(net('203.0.113.7', { ipv4Prefix: 24 })).toBe('203.0.113.0/24');
    expect(net('2001:db8:1:2::1', { ipv6Prefix: 48 })).toBe('2001:db8:1::/48');
    expect(net('2001:db8:1:2::1', { ipv6Prefix: 128 })).toBe('2001:db8:1:2::1');
  });
});
