// GET /healthz (the process is up), /readyz (Redis answers, rules are loaded), /metrics (Prometheus).
import { Router, type Request, type Response } from 'express';
import type { AppDeps } from '../deps.js';

export function healthRoutes(deps: AppDeps): Router {
  const router = Router();
  router.get('/healthz', (_req: Request, res: Response) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req: Request, res: Response) => {
    const redis = await ping(deps, 500);
    let rules: string | undefined;
    try {
      rules = deps.rules.current().version;
    } catch {
      rules = undefined;
    }
    const ready = redis && rules !== undefined;
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks: { redis: redis ? 'ok' : 'unavailable', rules: rules ?? 'not_loaded' } });
  });
  router.get('/metrics', async (_req: Request, res: Response) => {
    res.setHeader('Content-Type', deps.metrics.contentType);
    res.send(await deps.metrics.text());
  });
  return router;
}

async function ping(deps: AppDeps, timeoutMs: number): Promise<boolean> {
  const client = deps.sluice.redis;
  if (client.status !== 'ready') return false;
  let timer: NodeJS.Timeout | undefined;
  try {
    const answer = await Promise.race([
      client.ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return answer === 'PONG';
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}
