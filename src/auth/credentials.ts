// Reading a caller's secret from a request: `Authorization: Bearer <key>` or `X-API-Key: <key>`.
import type { IncomingHttpHeaders } from 'node:http';

/** The realm sent in WWW-Authenticate with every 401. */
export const WWW_AUTHENTICATE = 'Bearer realm="sluice"';

/** The presented key, or undefined when the request carries none (an empty value counts as none). */
export function presentedKey(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (typeof auth === 'string') {
    const m = /^Bearer[ \t]+(\S.*?)[ \t]*$/i.exec(auth);
    if (m) return m[1];
  }
  const key = headers['x-api-key'];
  const value = Array.isArray(key) ? key[0] : key;
  return value !== undefined && value.trim() !== '' ? value.trim() : undefined;
}
