// Every /v1/admin/ route behind the admin token guard.
import { Router } from 'express';
import type { RuleLimiters } from '../rule-decisions.js';
import type { AdminContext } from './context.js';
import { adminGuard } from './guard.js';
import { jobRoutes } from './job-routes.js';
import { laneRoutes } from './lane-routes.js';
import { miscRoutes } from './misc-routes.js';
import { queueRoutes } from './queue-routes.js';
import { streamRoutes, type FigureStream } from './stream-routes.js';

export function adminRouter(ctx: AdminContext, limiters: RuleLimiters, stream: FigureStream): Router {
  const router = Router();
  router.use('/v1/admin', adminGuard(ctx.token));
  router.use(queueRoutes(ctx));
  router.use(laneRoutes(ctx));
  router.use(jobRoutes(ctx));
  router.use(miscRoutes(ctx, limiters));
  router.use(streamRoutes(stream));
  return router;
}
