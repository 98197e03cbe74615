// The tenant routes' authentication: the rules' `auth:` section decides. `none` lets every request
// through (no tenant); tenants need a key (Bearer or X-API-Key) that maps to one, else 401 with
// WWW-Authenticate. The tenant is left in res.locals.tenant for the route.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { WWW_AUTHENTICATE, presentedKey } from '../auth/credentials.js';
import type { Tenant } from '../auth/tenant-keys.js';
import { SluiceError } from '../errors.js';
import type { AppDeps } from './deps.js';

export function tenantAuth(deps: AppDeps): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const auth = deps.rules.current().auth;
    if (auth?.mode === 'none' || (auth === undefined && !deps.requireAuth)) {
      next();
      return;
    }
    const refuse = (message: string) => {
      res.setHeader('WWW-Authenticate', WWW_AUTHENTICATE);
      next(new SluiceError('SLUICE_ERR_UNAUTHORIZED', message));
    };
    // A served rules file that lost its auth section (a reload) closes the door rather than opening it.
    if (auth === undefined) return refuse('the rules in force have no auth section: no key is accepted');
    const key = presentedKey(req.headers);
    if (key === undefined) return refuse('an API key is required: Authorization: Bearer <key> or X-API-Key: <key>');
    const tenant = auth.keys.tenantOf(key);
    if (!tenant) return refuse('the API key is not valid');
    res.locals.tenant = tenant;
    next();
  };
}

/** The tenant tenantAuth found, if any. */
export function tenantOf(res: Response): Tenant | undefined {
  return res.locals.tenant as Tenant | undefined;
}
