// The admin routes' guard: `Authorization: Bearer <SLUICE_ADMIN_TOKEN>`, compared in constant time,
// or the dashboard's session cookie (src/http/ui/). A tenant's API key is not an admin token; without
// a configured token every admin route is 401.
//
// A cookie travels with any request the browser makes, so a cookie alone does not authorize a change:
// besides SameSite=Strict, a request that is not GET/HEAD must carry `X-Sluice-UI: 1`, a header a page
// of another origin cannot set without a CORS preflight this server never grants.
import type { NextFunction, Request, Response } from 'express';
import { WWW_AUTHENTICATE } from '../../auth/credentials.js';
import type { AdminToken } from '../../auth/admin-token.js';
import { SluiceError } from '../../errors.js';

/** The dashboard's session cookie. */
export const SESSION_COOKIE = 'sluice_ui';
/** The header a cookie-authorized change must carry. */
export const UI_HEADER = 'x-sluice-ui';

/** The value of cookie `name` in a Cookie header. */
export function cookieOf(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** How the request is authorized as admin: by the token, by a session cookie, or not. */
export function adminAuthOf(token: AdminToken, req: Request): 'token' | 'session' | undefined {
  const header = req.headers.authorization;
  const presented = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1] : undefined;
  if (token.accepts(presented)) return 'token';
  if (presented === undefined && token.acceptsSession(cookieOf(req.headers.cookie, SESSION_COOKIE), Date.now())) return 'session';
  return undefined;
}

export function adminGuard(token: AdminToken) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const auth = adminAuthOf(token, req);
    if (auth === 'token' || (auth === 'session' && (req.method === 'GET' || req.method === 'HEAD' || req.headers[UI_HEADER] === '1'))) {
      next();
      return;
    }
    res.setHeader('WWW-Authenticate', `${WWW_AUTHENTICATE}, scope="admin"`);
    const presented = req.headers.authorization;
    const message = !token.enabled
      ? 'the admin API is off: set SLUICE_ADMIN_TOKEN on the server'
      : auth === 'session'
        ? 'a change made with the dashboard session needs the X-Sluice-UI: 1 header'
        : presented === undefined
          ? 'admin routes need Authorization: Bearer <admin token>'
          : 'not a valid admin token';
    next(new SluiceError('SLUICE_ERR_UNAUTHORIZED', message));
  };
}
