// `redis-sentinel://` connection strings: the Sentinel processes to ask and the master's name, turned
// into the ioredis options of a client that follows the master through failovers.
import type { RedisOptions } from 'ioredis';
import { SluiceError } from '../errors.js';

export const SENTINEL_SCHEME = 'redis-sentinel://';

/**
 * Parses `redis-sentinel://[[user]:password@]host:port[,host:port...]/mastername[/db][?options]`.
 *
 * - the user and password (percent-encoded) are the MASTER's (and replicas') ACL credentials;
 * - `?sentinelPassword=...&sentinelUsername=...` authenticate to the Sentinels themselves, when they
 *   require it (Sentinels and data nodes usually have different credentials);
 * - the port defaults to 26379, Sentinel's port; the master name is required (no default: naming the
 *   wrong master would silently connect to another data set).
 *
 * The client asks the Sentinels for the master's address on every (re)connect. A dead master drops
 * the socket (the client reconnects and asks again); a demoted one has its clients killed by the
 * Sentinels (CLIENT KILL) or answers writes with READONLY, which makes the client reconnect too; the
 * command that got READONLY is rejected, never re-sent (the hot path's "never run a decision twice").
 * ioredis's `failoverDetector` is left off on purpose: its `+switch-master` handler disconnects the
 * connector even while a reconnect is in progress, and the client then ends for good (status `end`,
 * never reconnecting: seen in test/faults/sentinel-failover.test.ts with ioredis 6.0.0).
 */
export function sentinelOptions(url: string): RedisOptions {
  if (!url.startsWith(SENTINEL_SCHEME)) throw invalid(url, `expected ${SENTINEL_SCHEME}`);
  const rest = url.slice(SENTINEL_SCHEME.length);
  const at = rest.lastIndexOf('@', rest.indexOf('/') >= 0 ? rest.indexOf('/') : rest.length);
  const auth = at >= 0 ? rest.slice(0, at) : '';
  const afterAuth = at >= 0 ? rest.slice(at + 1) : rest;
  const q = afterAuth.indexOf('?');
  const beforeQuery = q >= 0 ? afterAuth.slice(0, q) : afterAuth;
  const query = new URLSearchParams(q >= 0 ? afterAuth.slice(q + 1) : '');
  const slash = beforeQuery.indexOf('/');
  const hostList = slash >= 0 ? beforeQuery.slice(0, slash) : beforeQuery;
  const [name, dbText, ...extra] = (slash >= 0 ? beforeQuery.slice(slash + 1) : '').split('/');

  const sentinels = hostList
    .split(',')
    .filter(Boolean)
    .map((h) => {
      const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(h);
      const i = h.lastIndexOf(':');
      const host = bracketed ? bracketed[1]! : i > 0 ? h.slice(0, i) : h;
      const port = Number(bracketed ? (bracketed[2] ?? 26379) : i > 0 ? h.slice(i + 1) : 26379);
      if (!host || !Number.isInteger(port) || port <= 0 || port > 65_535) throw invalid(url, `bad Sentinel address '${h}'`);
      return { host, port };
    });
  if (!sentinels.length) throw invalid(url, 'no Sentinel addresses');
  if (!name) throw invalid(url, 'no master name (…/mastername)');
  if (extra.length) throw invalid(url, `unexpected path after the master name and db: '/${extra.join('/')}'`);
  const db = dbText === undefined || dbText === '' ? undefined : Number(dbText);
  if (db !== undefined && (!Number.isInteger(db) || db < 0)) throw invalid(url, `bad database number '${dbText}'`);
  for (const key of query.keys()) {
    if (key !== 'sentinelPassword' && key !== 'sentinelUsername') throw invalid(url, `unknown option '${key}' (known: sentinelPassword, sentinelUsername)`);
  }

  const colon = auth.indexOf(':');
  const username = colon >= 0 ? decodeURIComponent(auth.slice(0, colon)) : '';
  const password = colon >= 0 ? decodeURIComponent(auth.slice(colon + 1)) : decodeURIComponent(auth);
  const sentinelPassword = query.get('sentinelPassword');
  const sentinelUsername = query.get('sentinelUsername');
  return {
    sentinels,
    name: decodeURIComponent(name),
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
    ...(db !== undefined ? { db } : {}),
    ...(sentinelPassword ? { sentinelPassword } : {}),
    ...(sentinelUsername ? { sentinelUsername } : {}),
    // Sentinels are asked again quickly and forever, as data nodes are reconnected (connection.ts).
    sentinelRetryStrategy: (attempt: number) => Math.min(50 * attempt, 500),
    reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
  };
}

function invalid(url: string, problem: string): SluiceError {
  // The password never goes into a message.
  const shown = url.replace(/\/\/[^@/]*@/, '//***@');
  return new SluiceError('SLUICE_ERR_INVALID_OPTIONS', `redis: ${problem} in '${shown}'; expected redis-sentinel://[[user]:password@]host:port,host:port/mastername[/db]`);
}
