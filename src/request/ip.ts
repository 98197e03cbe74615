// IP addresses and CIDR ranges: parsing, IPv4-mapped IPv6 normalisation, prefix masking and
// canonical (RFC 5952) formatting. A leaf: imports nothing from sluice.
import { isIPv4, isIPv6 } from 'node:net';

/** A parsed address: IPv4 as 32 bits, IPv6 as 128 bits, both as a bigint. */
export interface IpAddress {
  readonly version: 4 | 6;
  readonly bits: bigint;
}

/** A parsed CIDR range; `bits` is already masked to `prefix`. */
export interface Cidr {
  readonly version: 4 | 6;
  readonly bits: bigint;
  readonly prefix: number;
}

const V4_MAPPED_PREFIX = 0xffffn << 32n;
const V4_MAPPED_MASK = ((1n << 96n) - 1n) << 32n;

/**
 * Parses an address as found in a socket or an X-Forwarded-For hop: strips `[...]` brackets, a
 * `:port` on IPv4 or bracketed IPv6, and an IPv6 zone (`%eth0`). IPv4-mapped IPv6
 * (`::ffff:10.0.0.1`) becomes the IPv4 address, so one client never has two spellings.
 * Returns undefined for anything that is not an address.
 */
export function parseIp(raw: string): IpAddress | undefined {
  let s = raw.trim();
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(s);
  if (bracket) s = bracket[1]!;
  else if (/^\d{1,3}(\.\d{1,3}){3}:\d+$/.test(s)) s = s.slice(0, s.lastIndexOf(':'));
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (isIPv4(s)) return { version: 4, bits: v4Bits(s) };
  if (!isIPv6(s)) return undefined;
  const bits = v6Bits(s);
  if ((bits & V4_MAPPED_MASK) === V4_MAPPED_PREFIX) return { version: 4, bits: bits & 0xffffffffn };
  return { version: 6, bits };
}

/**
 * Parses `10.0.0.0/8`, `2001:db8::/32` or a bare address (a /32 or /128). Host bits set below the
 * prefix are an error (`10.0.0.1/8` is probably a typo), as is a prefix out of range. An
 * IPv4-mapped IPv6 range of prefix >= 96 becomes the IPv4 range it covers.
 * @returns the range, or a message saying what is wrong.
 */
export function parseCidr(raw: string): Cidr | string {
  const [addr, prefixText, extra] = raw.trim().split('/');
  if (extra !== undefined || addr === undefined || addr === '') return `'${raw}' is not a CIDR range (expected e.g. 10.0.0.0/8)`;
  const ip = addr.includes(':') && isIPv6(addr) ? v6Raw(addr) : parseIp(addr);
  if (!ip) return `'${addr}' is not an IP address`;
  const width = ip.version === 4 ? 32 : 128;
  let prefix = width;
  if (prefixText !== undefined) {
    if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > width) {
      return `prefix '/${prefixText}' must be an integer from 0 to ${width}`;
    }
    prefix = Number(prefixText);
  }
  if (ip.version === 6 && (ip.bits & V4_MAPPED_MASK) === V4_MAPPED_PREFIX && prefix >= 96) {
    return cidrOf({ version: 4, bits: ip.bits & 0xffffffffn }, prefix - 96, raw);
  }
  return cidrOf(ip, prefix, raw);
}

function cidrOf(ip: IpAddress, prefix: number, raw: string): Cidr | string {
  const masked = maskBits(ip, prefix);
  if (masked !== ip.bits) return `'${raw}' has host bits set below /${prefix} (did you mean ${formatIp({ version: ip.version, bits: masked })}/${prefix}?)`;
  return { version: ip.version, bits: masked, prefix };
}

/** True when `ip` lies inside `range` (an IPv4 address never matches an IPv6 range, after normalisation). */
export function cidrContains(range: Cidr, ip: IpAddress): boolean {
  return range.version === ip.version && maskBits(ip, range.prefix) === range.bits;
}

/** The address with every bit below `prefix` cleared. */
export function maskBits(ip: IpAddress, prefix: number): bigint {
  const width = ip.version === 4 ? 32 : 128;
  if (prefix >= width) return ip.bits;
  const hostBits = BigInt(width - prefix);
  return (ip.bits >> hostBits) << hostBits;
}

/** Canonical text: dotted quad for IPv4, RFC 5952 for IPv6 (lowercase, longest zero run as `::`). */
export function formatIp(ip: IpAddress): string {
  if (ip.version === 4) {
    const b = ip.bits;
    return [24n, 16n, 8n, 0n].map((s) => String((b >> s) & 0xffn)).join('.');
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((ip.bits >> BigInt(i * 16)) & 0xffffn));
  // Longest run of two or more zero groups (the first one on a tie) becomes '::'.
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [bestStart, bestLen] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

function v4Bits(s: string): bigint {
  return s.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** An IPv6 address without the IPv4-mapped folding (for CIDR text, where `::ffff:0:0/96` is meant literally). */
function v6Raw(s: string): IpAddress {
  return { version: 6, bits: v6Bits(s) };
}

/** 128 bits of a valid IPv6 text (node:net has validated it), including an embedded dotted quad. */
function v6Bits(s: string): bigint {
  let text = s;
  let tail = 0n;
  let tailGroups = 0;
  const dotted = /(\d{1,3}(?:\.\d{1,3}){3})$/.exec(text);
  if (dotted) {
    tail = v4Bits(dotted[1]!);
    tailGroups = 2;
    text = text.slice(0, -dotted[1]!.length);
    if (text.endsWith(':') && !text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':').filter((g) => g !== '') : [];
  const restGroups = rest ? rest.split(':').filter((g) => g !== '') : [];
  const zeros = 8 - tailGroups - headGroups.length - restGroups.length;
  const all = [...headGroups, ...Array<string>(rest === undefined ? 0 : zeros).fill('0'), ...restGroups];
  let bits = 0n;
  for (const g of all) bits = (bits << 16n) | BigInt(parseInt(g, 16));
  return tailGroups ? (bits << 32n) | tail : bits;
}
