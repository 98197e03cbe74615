// IP and CIDR parsing: every spelling of one address is one address, and bad ranges say why.
import { describe, expect, it } from 'vitest';
import { cidrContains, formatIp, parseCidr, parseIp, type Cidr } from '../../../src/request/ip.js';

const text = (raw: string) => {
  const ip = parseIp(raw);
  return ip ? `${ip.version}:${formatIp(ip)}` : undefined;
};

describe('parseIp', () => {
  it.each([
    ['203.0.113.7', '4:203.0.113.7'],
    ['203.0.113.7:51234', '4:203.0.113.7'],
    [' 203.0.113.7 ', '4:203.0.113.7'],
    ['::ffff:203.0.113.7', '4:203.0.113.7'],
    ['::FFFF:cb00:7107', '4:203.0.113.7'],
    ['[::ffff:203.0.113.7]:443', '4:203.0.113.7'],
    ['2001:DB8:0:0:0:0:0:1', '6:2001:db8::1'],
    ['[2001:db8::1]:8080', '6:2001:db8::1'],
    ['fe80::1%eth0', '6:fe80::1'],
    ['::1', '6:::1'],
    ['::', '6:::'],
    ['::1.2.3.4', '6:::102:304'],
    ['1:2:3:4:5:6:1.2.3.4', '6:1:2:3:4:5:6:102:304'],
  ])('%s -> %s', (raw, expected) => {
    expect(text(raw)).toBe(expected);
  });

  it.each(['', 'banana', '256.1.1.1', '1.2.3', '2001:db8::1::2', 'unknown', '203.0.113.7:99999:1'])('refuses %j', (raw) => {
    expect(parseIp(raw)).toBeUndefined();
  });
});

describe('formatIp (RFC 5952)', () => {
  it.each([
    ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1'],
    ['0:0:0:0:0:0:0:1', '::1'],
    ['1:0:0:0:0:0:0:0', '1::'],
  ])('%s -> %s', (raw, expected) => {
    expect(formatIp(parseIp(raw)!)).toBe(expected);
  });
});

describe('parseCidr', () => {
  const ok = (raw: string) => parseCidr(raw) as Cidr;

  it('reads ranges and bare addresses', () => {
    expect(ok('10.0.0.0/8')).toEqual({ version: 4, bits: 0x0a000000n, prefix: 8 });
    expect(ok('10.1.2.3')).toMatchObject({ version: 4, prefix: 32 });
    expect(ok('2001:db8::/32')).toMatchObject({ version: 6, prefix: 32 });
    expect(ok('::1')).toMatchObject({ version: 6, prefix: 128 });
    expect(ok('0.0.0.0/0')).toMatchObject({ version: 4, prefix: 0, bits: 0n });
  });

  it('turns an IPv4-mapped IPv6 range into the IPv4 range it covers', () => {
    expect(ok('::ffff:10.0.0.0/104')).toEqual({ version: 4, bits: 0x0a000000n, prefix: 8 });
  });

  it.each([
    ['10.0.0.1/8', "'10.0.0.1/8' has host bits set below /8 (did you mean 10.0.0.0/8?)"],
    ['10.0.0.0/33', "prefix '/33' must be an integer from 0 to 32"],
    ['2001:db8::/129', "prefix '/129' must be an integer from 0 to 128"],
    ['10.0.0.0/x', "prefix '/x' must be an integer from 0 to 32"],
    ['banana/8', "'banana' is not an IP address"],
    ['10.0.0.0/8/8', "'10.0.0.0/8/8' is not a CIDR range (expected e.g. 10.0.0.0/8)"],
    ['/8', "'/8' is not a CIDR range (expected e.g. 10.0.0.0/8)"],
  ])('refuses %s', (raw, message) => {
    expect(parseCidr(raw)).toBe(message);
  });

  it('matches addresses inside the range only, v4-mapped v6 included', () => {
    const range = ok('10.0.0.0/8');
    expect(cidrContains(range, parseIp('10.255.0.1')!)).toBe(true);
    expect(cidrContains(range, parseIp('::ffff:10.1.1.1')!)).toBe(true);
    expect(cidrContains(range, parseIp('11.0.0.1')!)).toBe(false);
    expect(cidrContains(ok('2001:db8::/32'), parseIp('2001:db8:ffff::1')!)).toBe(true);
    expect(cidrContains(ok('2001:db8::/32'), parseIp('2001:db9::1')!)).toBe(false);
    expect(cidrContains(ok('0.0.0.0/0'), parseIp('::1')!)).toBe(false);
  });
});
