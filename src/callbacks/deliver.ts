// One delivery attempt: POST the signed body to the callback URL, connecting only to an address checked
// now (the DNS answer is checked again at each attempt and the connection pinned to it, so a name that
// re-resolves to a private address is refused), redirects not followed, bounded in time.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addressRefusal, systemLookup, type Lookup } from './allow.js';
import { SIGNATURE_HEADER, signatureHeader } from './sign.js';

export interface AttemptRecord {
  /** When the attempt began (epoch ms). */
  atMs: number;
  /** The receiver's HTTP status, when it answered. */
  status?: number;
  /** Why it did not count as delivered: a non-2xx status, a timeout, a refused address, a network error. */
  error?: string;
  durationMs: number;
  delivered: boolean;
}

export interface DeliveryRequest {
  url: string;
  body: string;
  secret: string;
  privateAllowed: boolean;
  /** A stable id of this outcome (the receiver dedupes on it: delivery is at least once). */
  eventId: string;
  timeoutMs: number;
}

export async function deliverOnce(req: DeliveryRequest, lookup: Lookup = systemLookup, now = Date.now): Promise<AttemptRecord> {
  const atMs = now();
  const url = new URL(req.url);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const done = (r: Omit<AttemptRecord, 'atMs' | 'durationMs' | 'delivered'>): AttemptRecord => ({
    atMs,
    durationMs: now() - atMs,
    delivered: r.status !== undefined && r.status >= 200 && r.status < 300,
    ...r,
  });
  const addresses = isIP(host) ? [host] : await lookup(host).catch(() => [] as string[]);
  const refusal = await addressRefusal(host, req.privateAllowed, async () => addresses);
  if (refusal) return done({ error: `refused: ${refusal}` });
  const address = addresses[0]!;
  // Connect to the address just checked, whatever a second resolution would say.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    const family = isIP(address);
    if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
  const timestamp = Math.floor(atMs / 1000);
  return new Promise<AttemptRecord>((resolve) => {
    const make = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = make(
      url,
      {
        method: 'POST',
        lookup: pinned,
        timeout: req.timeoutMs,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(req.body),
          'user-agent': 'sluice-callbacks',
          'sluice-event-id': req.eventId,
          [SIGNATURE_HEADER.toLowerCase()]: signatureHeader(req.secret, req.body, timestamp),
        },
      },
      (res) => {
        // Only the status matters; the body is read (bounded) and dropped so the socket is freed.
        res.resume();
        const status = res.statusCode ?? 0;
        resolve(done(status >= 300 && status < 400 ? { status, error: 'redirect not followed' } : status >= 200 && status < 300 ? { status } : { status, error: `answered ${status}` }));
      },
    );
    request.on('timeout', () => request.destroy(new Error(`no answer within ${req.timeoutMs} ms`)));
    request.on('error', (error) => resolve(done({ error: error.message })));
    request.end(req.body);
  });
}
