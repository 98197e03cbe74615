// createApp(deps): the express app — submit, job status (long-poll) and cancel, job events (SSE), decision service, the admin API
// and its dashboard (/ui), the OpenAPI document, health and metrics. It never listens: tests drive it in-process (supertest)
// and `sluice serve` puts it on a port.
import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import type { AppDeps } from './deps.js';
import { SluiceError } from '../errors.js';
import { asSluiceError, sendError } from './problem.js';
import { QueueThrottles } from './queue-throttles.js';
import { decisionsRoute } from './routes/decisions.js';
import { healthRoutes } from './routes/health.js';
import { jobStatusRoute } from './routes/job-status.js';
import { submitRoute } from './routes/submit.js';
import { jobCancelRoute } from './routes/job-cancel.js';
import { adminContext } from './admin/context.js';
import { adminRouter } from './admin/router.js';
import { FigureStream } from './admin/stream-routes.js';
import { uiRoutes } from './ui/routes.js';
import { RuleLimiters } from './rule-decisions.js';
import { openApiRoute } from './openapi/route.js';
import { RedisOutageLog } from './redis-outage-log.js';
import { jobEventsRoute } from './routes/job-events.js';
import { LiveWaits } from './live/live-waits.js';

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  // Client addresses come from the socket; X-Forwarded-For is read only through the rules' trusted proxies.
  app.set('trust proxy', false);
  const throttles = new QueueThrottles(deps.sluice);
  const admin = adminContext(deps, throttles);
  // The deny cache: a key Redis refused until T is refused here until T without a Redis call (docs/algorithms.md).
  const limiters = new RuleLimiters((p) => deps.sluice.limiter(p, { denyCache: true }));
  const outage = new RedisOutageLog(deps.logger);
  const waits = new LiveWaits(deps.metrics);
  // `sluice serve` ends them all when it shuts down (app.locals: the runtime loads this module lazily).
  app.locals.liveWaits = waits;
  // A route marks the answers Redis gave (markRedisAnswered): the first after an outage ends it in the log.
  app.use((_req: Request, res: Response, next: NextFunction) => {
    res.once('finish', () => {
      if (res.locals.redisAnswered === true) outage.answered();
    });
    next();
  });
  app.use(healthRoutes(deps));
  app.use(openApiRoute());
  app.use(submitRoute(deps, throttles, admin.cache));
  app.use(jobStatusRoute(deps, throttles, waits));
  app.use(jobEventsRoute(deps, throttles, waits));
  app.use(jobCancelRoute(deps, throttles, admin.scripts));
  app.use(decisionsRoute(deps, limiters));
  const stream = new FigureStream(admin);
  // The server calls it when it shuts down: an open event stream would otherwise hold the close up.
  app.locals.closeStreams = () => stream.closeAll();
  app.use(adminRouter(admin, limiters, stream));
  app.use(uiRoutes(admin.token));
  app.use((req: Request, _res: Response, next: NextFunction) => next(new SluiceError('SLUICE_ERR_NOT_FOUND', `no route ${req.method} ${req.path}`)));
  // Express 5 passes rejected async handlers here too.
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = asSluiceError(error);
    // A Redis outage is logged by its transitions, not once per request (each would carry a stack).
    if (e.code === 'SLUICE_ERR_REDIS_UNAVAILABLE') outage.failed(e, `${req.method} ${req.route?.path ?? req.path}`);
    else if (e.httpStatus >= 500) deps.logger.error({ err: e.cause ?? e, code: e.code }, 'request failed');
    if (res.headersSent) return;
    sendError(res, e);
  });
  return app;
}
