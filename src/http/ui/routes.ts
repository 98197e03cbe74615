// /ui: the operator dashboard. The page and its bundle are public; everything it shows comes from the
// admin API, which accepts the session cookie set here (src/http/admin/guard.ts). The login form
// POSTs the admin token in the body (never a URL); the cookie holds a signed expiry, not the token.
import express, { Router, type Request, type Response } from 'express';
import type { AdminToken } from '../../auth/admin-token.js';
import { SESSION_MS } from '../../auth/admin-token.js';
import { SluiceError } from '../../errors.js';
import { adminAuthOf, SESSION_COOKIE } from '../admin/guard.js';
import { loadAssets } from './assets.js';
import { appPage, loginPage, notBuiltPage } from './pages.js';

/** What the browser may load and run on these pages: this origin only, no frames. */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'";

function html(res: Response, status: number, body: string): void {
  res.status(status).setHeader('Content-Type', 'text/html; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Content-Security-Policy', CSP);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  // same-origin, not no-referrer: with no-referrer the browser posts the login form with `Origin: null`.
  res.setHeader('Referrer-Policy', 'same-origin');
  res.send(body);
}

function cookie(req: Request, value: string, maxAgeS: number): string {
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${req.secure ? '; Secure' : ''}`;
}

/**
 * A form posted from another origin is refused (a login CSRF would log the victim into the attacker's
 * session): the browser's Sec-Fetch-Site when it sends one, else the Origin against the Host.
 */
function sameOrigin(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

export function uiRoutes(token: AdminToken): Router {
  const router = Router();
  const assets = loadAssets();

  router.get('/ui', (req: Request, res: Response) => {
    if (assets.size === 0) return html(res, 503, notBuiltPage());
    if (adminAuthOf(token, req) === 'session') return html(res, 200, appPage());
    html(res, 200, loginPage(token.enabled ? undefined : 'The admin API is off: set SLUICE_ADMIN_TOKEN on the server.'));
  });

  router.get('/ui/assets/:file', (req: Request, res: Response) => {
    const asset = assets.get(String(req.params.file));
    if (!asset) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no asset '${String(req.params.file)}'`);
    res.setHeader('Content-Type', asset.type);
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.status(200).send(asset.body);
  });

  router.post('/ui/login', express.urlencoded({ extended: false, limit: 4096 }), (req: Request, res: Response) => {
    const presented = typeof req.body?.token === 'string' ? req.body.token : undefined;
    const session = sameOrigin(req) && token.accepts(presented) ? token.session(Date.now()) : undefined;
    if (!session) {
      html(res, 401, loginPage(token.enabled ? 'That is not the admin token.' : 'The admin API is off: set SLUICE_ADMIN_TOKEN on the server.'));
      return;
    }
    res.setHeader('Set-Cookie', cookie(req, session, Math.floor(SESSION_MS / 1000)));
    res.redirect(303, '/ui');
  });

  router.post('/ui/logout', (req: Request, res: Response) => {
    res.setHeader('Set-Cookie', cookie(req, '', 0));
    res.redirect(303, '/ui');
  });
  return router;
}
