// Who is asking, as plain data: the small view of an HTTP request that identity sources read (so
// rules and tests need no express), and how a header or a property path is read from it.
/** What the request-to-descriptor mapping needs of a request: small and plain, so tests need no express. */
export interface RequestInfo {
  /** HTTP method, any case. */
  method: string;
  /** The path as received, query included or not (`req.originalUrl`); it is normalised for route groups. */
  path: string;
  /** Request headers with lower-case names, as node gives them (`req.headers`). */
  headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The TCP peer (`req.socket.remoteAddress`). */
  socketAddress: string | undefined;
  /** The authenticated user, as an auth middleware left it (`req.user`); read by `property: user.id`. */
  user?: unknown;
}

/** A property path of the request (`user.id`) as a string: strings (not empty), finite numbers and bigints only. */
export function requestProperty(req: RequestInfo, path: string): string | undefined {
  return scalar(propertyOf(req, path));
}

function propertyOf(req: RequestInfo, path: string): unknown {
  let v: unknown = req;
  for (const part of path.split('.')) {
    if (v === null || typeof v !== 'object' || !Object.prototype.hasOwnProperty.call(v, part)) return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

function scalar(v: unknown): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'bigint') return String(v);
  return undefined;
}

/** The first value of a header (any case of its name), trimmed; undefined when absent or empty. */
export function requestHeader(req: RequestInfo, name: string): string | undefined {
  const lower = name.toLowerCase();
  let raw = req.headers[lower];
  if (raw === undefined) {
    const found = Object.keys(req.headers).find((k) => k.toLowerCase() === lower);
    raw = found === undefined ? undefined : req.headers[found];
  }
  const first = typeof raw === 'string' ? raw : raw?.[0];
  const trimmed = first?.trim();
  return trimmed ? trimmed : undefined;
}
