// How an HTTP request becomes descriptors (the `http:` section): each template's entries take
// their values from identity sources; a template whose source has no value yields no descriptor.
import { createHash } from 'node:crypto';
import { DEFAULT_IPV4_PREFIX, DEFAULT_IPV6_PREFIX, clientNetwork, resolveClientIp, TrustedProxies } from '../request/identity.js';
import { parseIp } from '../request/ip.js';
import { requestHeader, requestProperty, type RequestInfo } from '../request/request-info.js';
import type { RouteGroups } from '../request/route-groups.js';
import type { DescriptorEntry } from './descriptor.js';
import type { EntrySpec, HttpSpec } from './http-schema.js';
import { SECRET_HEADER } from './queue-schema.js';
import { SourceMemo } from './source-memo.js';

/** Options of one mapping. */
export interface DescriptorOptions {
  /**
   * Hashes secret values (API keys, secret headers, entries with `hash: true`). Default: SHA-256,
   * 22 base64url characters, unkeyed. Pass `(v) => sluice.keys.hash(v)` to use the instance's HMAC secret.
   */
  hash?: (value: string) => string;
}

/** The compiled `http:` section. */
export interface HttpRules {
  /** The domain HTTP descriptors are matched in. */
  readonly domain: string;
  readonly trustedProxies: readonly string[];
  readonly ipv4Prefix: number;
  readonly ipv6Prefix: number;
  readonly apiKeyHeader: string;
  readonly user: HttpSpec['user'];
  readonly plan: HttpSpec['plan'];
  /** Templates, each an ordered list of entries. */
  readonly templates: readonly (readonly EntrySpec[])[];
}

/** Default hash of secret values: SHA-256, 132 bits as 22 base64url characters (as the key builder does). */
export function defaultHash(value: string): string {
  return createHash('sha256').update(value).digest('base64url').slice(0, 22);
}

/** Compiles the `http:` section into its plain description and a request-to-descriptors function. */
export function compileHttp(
  spec: HttpSpec,
  routes: RouteGroups,
): {
  rules: HttpRules;
  descriptors: (req: RequestInfo, options?: DescriptorOptions) => DescriptorEntry[][];
  /**
   * The request's descriptors as a memo key: what they are a pure function of (each source's value,
   * read once, with `hash`), written into `values` (the sources in order) and returned as one string
   * that tells any two different lists of values apart. `descriptorsOf(values, hash)` builds them.
   */
  sourcesKey: (req: RequestInfo, hash: (v: string) => string, values: (string | undefined)[]) => string;
  descriptorsOf: (values: readonly (string | undefined)[], hash: (v: string) => string) => DescriptorEntry[][];
  source: (source: string, req: RequestInfo, options?: DescriptorOptions) => string | undefined;
} {
  const trusted = TrustedProxies.from(spec.trusted_proxies ?? []);
  const rules: HttpRules = {
    domain: spec.domain,
    trustedProxies: spec.trusted_proxies ?? [],
    ipv4Prefix: spec.ipv4_prefix ?? DEFAULT_IPV4_PREFIX,
    ipv6Prefix: spec.ipv6_prefix ?? DEFAULT_IPV6_PREFIX,
    apiKeyHeader: spec.api_key_header ?? 'X-API-Key',
    user: spec.user,
    plan: spec.plan,
    templates: spec.descriptors,
  };

  // Laid out once: each template entry's constant value, or the index of its source among the
  // distinct sources the templates read (each read once per request).
  const sourceNames: string[] = [];
  const templates = rules.templates.map((template) =>
    template.map((entry) => {
      let at = -1;
      if (entry.value === undefined) {
        at = sourceNames.indexOf(entry.source!);
        if (at < 0) at = sourceNames.push(entry.source!) - 1;
      }
      return { key: entry.key, value: entry.value, at, hash: entry.hash === true && entry.source !== 'api_key' && !isSecretSource(entry.source) };
    }),
  );
  // The client network and the route group are pure functions of a few request fields: once per
  // distinct address (and X-Forwarded-For) and per distinct method and path, not per request.
  const networks = new SourceMemo();
  const groups = new SourceMemo();
  const readMemo = (source: string, req: RequestInfo, hash: (v: string) => string): string | undefined => {
    if (source === 'ip') {
      const forwarded = req.headers['x-forwarded-for'];
      if (req.socketAddress !== undefined && typeof forwarded !== 'object') {
        // An address never holds a newline: the key without a forwarded header cannot equal one with it.
        const key = forwarded === undefined ? req.socketAddress : `${req.socketAddress}\n${forwarded}`;
        return networks.of(key, () => readSource(source, req, rules, trusted, routes, hash));
      }
    } else if (source === 'route') {
      return groups.of(`${req.method} ${req.path}`, () => readSource(source, req, rules, trusted, routes, hash));
    }
    return readSource(source, req, rules, trusted, routes, hash);
  };
  const readSources = (req: RequestInfo, hash: (v: string) => string, values: (string | undefined)[]): void => {
    for (let i = 0; i < sourceNames.length; i++) values[i] = readMemo(sourceNames[i]!, req, hash);
  };
  const sourcesKey = (req: RequestInfo, hash: (v: string) => string, values: (string | undefined)[]): string => {
    readSources(req, hash, values);
    let key = '';
    for (let i = 0; i < sourceNames.length; i++) {
      const v = values[i];
      // Length-prefixed: no value (a user id, a header) can make two different lists read the same.
      key += v === undefined ? '-' : `${v.length}:${v}`;
    }
    return key;
  };
  const descriptorsOf = (values: readonly (string | undefined)[], hash: (v: string) => string): DescriptorEntry[][] => {
    const out: DescriptorEntry[][] = [];
    for (const template of templates) {
      const entries: DescriptorEntry[] = [];
      for (const entry of template) {
        let value = entry.value ?? values[entry.at];
        if (value === undefined) break;
        if (entry.hash) value = hash(value);
        entries.push({ key: entry.key, value });
      }
      if (entries.length === template.length) out.push(entries);
    }
    return out;
  };
  const descriptors = (req: RequestInfo, options: DescriptorOptions = {}): DescriptorEntry[][] => {
    const hash = options.hash ?? defaultHash;
    const values = new Array<string | undefined>(sourceNames.length);
    readSources(req, hash, values);
    return descriptorsOf(values, hash);
  };
  const source = (name: string, req: RequestInfo, options: DescriptorOptions = {}) =>
    readSource(name, req, rules, trusted, routes, options.hash ?? defaultHash);
  return { rules, descriptors, sourcesKey, descriptorsOf, source };
}

function isSecretSource(source: string | undefined): boolean {
  return source !== undefined && source.startsWith('header:') && SECRET_HEADER.test(source.slice(7));
}

function readSource(
  source: string,
  req: RequestInfo,
  rules: HttpRules,
  trusted: TrustedProxies,
  routes: RouteGroups,
  hash: (v: string) => string,
): string | undefined {
  switch (source) {
    case 'api_key': {
      const key = requestHeader(req, rules.apiKeyHeader);
      // A raw API key never leaves this function.
      return key === undefined ? undefined : hash(key);
    }
    case 'user':
      return rules.user ? lookup(req, rules.user, trusted) : undefined;
    case 'plan':
      return (rules.plan ? lookup(req, rules.plan, trusted) : undefined) ?? rules.plan?.default;
    case 'ip': {
      const ip = resolveClientIp(req.socketAddress, req.headers['x-forwarded-for'], trusted);
      return ip ? clientNetwork(ip, { ipv4Prefix: rules.ipv4Prefix, ipv6Prefix: rules.ipv6Prefix }) : undefined;
    }
    case 'route':
      return routes.match(req.method, req.path);
    case 'method':
      return req.method.toUpperCase();
    default: {
      const name = source.slice('header:'.length);
      const value = requestHeader(req, name);
      return value !== undefined && SECRET_HEADER.test(name) ? hash(value) : value;
    }
  }
}

/** A user id or plan name from a property path or (from a trusted peer, by default) a header. */
function lookup(
  req: RequestInfo,
  spec: { property?: string | undefined; header?: string | undefined; require_trusted_peer?: boolean | undefined },
  trusted: TrustedProxies,
): string | undefined {
  if (spec.property !== undefined) return requestProperty(req, spec.property);
  if (spec.header === undefined) return undefined;
  if (spec.require_trusted_peer !== false) {
    const peer = req.socketAddress === undefined ? undefined : parseIp(req.socketAddress);
    if (!peer || !trusted.trusts(peer)) return undefined;
  }
  return requestHeader(req, spec.header);
}
