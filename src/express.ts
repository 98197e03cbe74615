// sluice/express: the HTTP layer's public API, the only entry whose types need express (an
// optional peer dependency): the decision middleware built from a sluice instance, and the app.
export { decisionMiddleware, type MiddlewareOptions } from './http/middleware.js';
export { createApp } from './http/app.js';
export type { AppDeps } from './http/deps.js';
