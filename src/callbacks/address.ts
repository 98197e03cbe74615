// Addresses a callback may not reach unless its host is listed by name in the rules' allow-list:
// loopback, link-local, private, shared (CGNAT), unspecified, multicast and reserved ranges. A callback
// to one of these is how a submitter would reach the network sluice runs in (SSRF).
import { BlockList, isIP } from 'node:net';

const RANGES: readonly [string, number, 'ipv4' | 'ipv6', string][] = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared (CGNAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'reserved'],
  ['224.0.0.0', 3, 'ipv4', 'multicast or reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];

const lists = RANGES.map(([net, prefix, type, name]) => {
  const list = new BlockList();
  list.addSubnet(net, prefix, type);
  return { list, name };
});

/** The refused range `address` is in ('loopback', 'private', ...), or undefined when it is public. */
export function refusedRange(address: string): string | undefined {
  let ip = address;
  let family = isIP(ip);
  if (family === 0) return 'not an IP address';
  // An IPv4-mapped IPv6 address (::ffff:127.0.0.1) is checked as the IPv4 address it is.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) {
    ip = mapped[1]!;
    family = 4;
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  for (const { list, name } of lists) if (list.check(ip, type)) return name;
  return undefined;
}
