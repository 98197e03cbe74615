// Who is calling, by network: the client IP resolved through trusted proxies only, and the network
// (IPv4 /32, IPv6 /64 by default) that a per-IP limit counts.
import { cidrContains, formatIp, maskBits, parseCidr, parseIp, type Cidr, type IpAddress } from './ip.js';

/** Named ranges accepted in a trusted proxy list, as in proxy-addr. */
export const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
});

/** A compiled list of trusted proxy ranges. */
export class TrustedProxies {
  private constructor(private readonly ranges: readonly Cidr[]) {}

  /** No proxy is trusted: X-Forwarded-For is always ignored. */
  static readonly none = new TrustedProxies([]);

  /**
   * Compiles CIDR ranges, bare addresses and the names `loopback`, `linklocal`, `uniquelocal`.
   * @throws Error naming the first bad entry (the rules schema validates entries one by one first,
   *   with {@link checkTrustedProxy}, so users see every bad entry with its line).
   */
  static from(entries: readonly string[]): TrustedProxies {
    const ranges: Cidr[] = [];
    for (const entry of entries) {
      for (const text of NAMED_RANGES[entry] ?? [entry]) {
        const r = parseCidr(text);
        if (typeof r === 'string') throw new Error(`trusted proxy ${r}`);
        ranges.push(r);
      }
    }
    return new TrustedProxies(ranges);
  }

  /** True when `ip` is inside one of the trusted ranges. */
  trusts(ip: IpAddress): boolean {
    return this.ranges.some((r) => cidrContains(r, ip));
  }

  /** How many ranges are trusted (named ranges count as their parts). */
  get size(): number {
    return this.ranges.length;
  }
}

/** Undefined when `entry` is a valid trusted proxy entry, otherwise what is wrong with it. */
export function checkTrustedProxy(entry: string): string | undefined {
  if (NAMED_RANGES[entry]) return undefined;
  const r = parseCidr(entry);
  return typeof r === 'string' ? r : undefined;
}

/**
 * The client's address. The socket peer is the only fact; X-Forwarded-For is read only when that
 * peer is a trusted proxy, and then walked from the right (the hop our own proxy appended) past
 * every trusted proxy: the first untrusted hop is the client. Hops to the left of it were written
 * by the client or its proxies and are never believed.
 *
 * A hop that is not an address stops the walk at the last trusted hop: that proxy is then counted
 * as the client, which over-limits rather than letting a forged value through.
 *
 * @param socketAddress `req.socket.remoteAddress`; undefined when the socket is gone.
 * @param forwardedFor  the X-Forwarded-For header value(s), as node gives them.
 * @returns the address, or undefined when even the socket address is unknown or unparseable.
 */
export function resolveClientIp(
  socketAddress: string | undefined,
  forwardedFor: string | readonly string[] | undefined,
  trusted: TrustedProxies,
): IpAddress | undefined {
  const peer = socketAddress === undefined ? undefined : parseIp(socketAddress);
  if (!peer || !trusted.trusts(peer) || forwardedFor === undefined) return peer;
  const hops = (typeof forwardedFor === 'string' ? [forwardedFor] : forwardedFor)
    .join(',')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  let current = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parseIp(hops[i]!);
    if (!hop) return current;
    current = hop;
    if (!trusted.trusts(hop)) return hop;
  }
  // Every hop is trusted: the leftmost is as far as the chain goes.
  return current;
}

/** Default IPv4 prefix of one client: each address. */
export const DEFAULT_IPV4_PREFIX = 32;

/**
 * Default IPv6 prefix of one client: a /56. Residential ISPs delegate a /56 (or a /48) to one customer,
 * who can then rotate through 256 /64s; counting per /64 let such a client through 100 of 100 calls of
 * an IP limit. The cost: customers of a hosting provider that puts several of them in one /56 (or /64)
 * share a limit (docs/decisions/identity-and-proxies.md).
 */
export const DEFAULT_IPV6_PREFIX = 56;

/** How per-IP limits group addresses. */
export interface NetworkGrouping {
  /** IPv4 prefix length counted as one client (default 32: each address). */
  ipv4Prefix?: number;
  /** IPv6 prefix length counted as one client (default 56: what one customer site is typically delegated). */
  ipv6Prefix?: number;
}

/**
 * The network a per-IP limit counts: the address itself for a full-length prefix (`203.0.113.7`),
 * otherwise the canonical network with its prefix (`2001:db8:1:200::/56`, `203.0.113.0/24`).
 * Grouping IPv6 matters because one customer can use any address of the /56 (or /48) delegated to it.
 */
export function clientNetwork(ip: IpAddress, grouping: NetworkGrouping = {}): string {
  const prefix = ip.version === 4 ? (grouping.ipv4Prefix ?? DEFAULT_IPV4_PREFIX) : (grouping.ipv6Prefix ?? DEFAULT_IPV6_PREFIX);
  const width = ip.version === 4 ? 32 : 128;
  if (prefix >= width) return formatIp(ip);
  return `${formatIp({ version: ip.version, bits: maskBits(ip, prefix) })}/${prefix}`;
}
