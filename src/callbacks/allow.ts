// Which callback URLs a submit may carry: http(s), no credentials, a host matching the rules'
// `callbacks.allow` list, and every address it resolves to public — unless the host (name or IP) is
// listed exactly, which is how an operator allows an internal receiver.
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { refusedRange } from './address.js';

export type Lookup = (host: string) => Promise<string[]>;
export const systemLookup: Lookup = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

export interface CallbackAllowList {
  /** Host patterns: `hooks.example.com`, `*.example.com` (any subdomain), `10.0.0.7`; lower case. */
  readonly hosts: readonly string[];
}

export type CallbackCheck = { ok: true; url: string; privateAllowed: boolean } | { ok: false; message: string };

const hostOf = (url: URL) => url.hostname.toLowerCase().replace(/^\[(.*)\]$/, '$1');

/** True when `host` is listed exactly (not through a wildcard): it may then be a private address. */
function listedExactly(host: string, allow: CallbackAllowList): boolean {
  return allow.hosts.includes(host);
}

function matches(host: string, allow: CallbackAllowList): boolean {
  return allow.hosts.some((p) => p === host || (p.startsWith('*.') && host.endsWith(p.slice(1)) && host.length > p.length - 1));
}

/** Checks a callback URL at submit time (and its addresses again at each delivery, see deliver.ts). */
export async function checkCallbackUrl(raw: string, allow: CallbackAllowList | undefined, lookup: Lookup = systemLookup): Promise<CallbackCheck> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, message: 'not a URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, message: `must be http or https, not ${url.protocol.replace(':', '')}` };
  if (url.username || url.password) return { ok: false, message: 'must not carry credentials' };
  const host = hostOf(url);
  if (!allow || allow.hosts.length === 0) return { ok: false, message: 'callbacks are not enabled: the rules file has no callbacks.allow list' };
  if (!matches(host, allow)) return { ok: false, message: `host '${host}' is not in the rules' callbacks.allow list` };
  const privateAllowed = listedExactly(host, allow);
  const refusal = await addressRefusal(host, privateAllowed, lookup);
  if (refusal) return { ok: false, message: refusal };
  return { ok: true, url: url.toString(), privateAllowed };
}

/** Why `host`'s addresses may not be called (undefined: they may). Every address is checked, not only the first. */
export async function addressRefusal(host: string, privateAllowed: boolean, lookup: Lookup = systemLookup): Promise<string | undefined> {
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await lookup(host);
  } catch (error) {
    return `host '${host}' does not resolve (${(error as { code?: string }).code ?? 'lookup failed'})`;
  }
  if (addresses.length === 0) return `host '${host}' does not resolve`;
  if (privateAllowed) return undefined;
  for (const address of addresses) {
    const range = refusedRange(address);
    if (range) return `host '${host}' resolves to ${address}, a ${range} address (list the host exactly in callbacks.allow to allow it)`;
  }
  return undefined;
}
