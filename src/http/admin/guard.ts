// The admin routes' guard: `Authorization: Bearer <SLUICE_ADMIN_TOKEN>`, compared in constant time.
// A tenant's API key is not an admin token; without a configured token every admin route is 401.
import type { NextFunction, Request, Response } from 'express';
import { WWW_AUTHENTICATE } from '../../auth/credentials.js';
import type { AdminToken } from '../../auth/admin-token.js';
import { SluiceError } from '../../errors.js';

export function adminGuard(token: AdminToken) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const header = req.headers.authorization;
    const presented = typeof header === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)?.[1] : undefined;
    if (token.accepts(presented)) {
      next();
      return;
    }
    res.setHeader('WWW-Authenticate', `${WWW_AUTHENTICATE}, scope="admin"`);
    const message = !token.enabled
      ? 'the admin API is off: set SLUICE_ADMIN_TOKEN on the server'
      : presented === undefined
        ? 'admin routes need Authorization: Bearer <admin token>'
        : 'not a valid admin token';
    next(new SluiceError('SLUICE_ERR_UNAUTHORIZED', message));
  };
}
