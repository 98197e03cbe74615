// /v1/admin/audit (the audit stream, newest first) and /v1/admin/decisions/reset (clear one decision
// key: the counter a rule keeps for one descriptor).
import { Router, type Request, type Response } from 'express';
import { whenReady } from '../../redis/connection.js';
import { SluiceError } from '../../errors.js';
import { descriptorIdentity } from '../../rules/index.js';
import { DEFAULT_JSON_MAX_DEPTH } from '../deps.js';
import { jsonBody, parseBody, requireJson } from '../body.js';
import { ruleKeyOptions, type RuleLimiters } from '../rule-decisions.js';
import { parsePart, record, send, type AdminContext } from './context.js';
import { auditResponseSchema, pageQuerySchema, resetBodySchema, resetResponseSchema } from './schemas.js';

export function miscRoutes(ctx: AdminContext, limiters: RuleLimiters): Router {
  const router = Router();
  router.get('/v1/admin/audit', async (req: Request, res: Response) => {
    const { limit, cursor } = parsePart(pageQuerySchema, req.query, 'query');
    if (cursor !== undefined && !/^\d+-\d+$/.test(cursor)) {
      throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', 'invalid query: cursor: not a cursor this API returned', {
        details: [{ path: 'cursor', message: 'not a cursor this API returned', code: 'custom' }],
      });
    }
    const page = await ctx.audit.read(limit, cursor);
    send(res, 200, auditResponseSchema, page);
  });

  router.post('/v1/admin/decisions/reset', requireJson(), jsonBody(16 * 1024, DEFAULT_JSON_MAX_DEPTH), async (req: Request, res: Response) => {
    const body = parseBody(resetBodySchema, req);
    const rules = ctx.deps.rules.current();
    if (!rules.domains.includes(body.domain)) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no domain '${body.domain}'`);
    const entries = 'entries' in body.descriptor ? body.descriptor.entries : [body.descriptor];
    const rule = rules.matchDescriptor(body.domain, entries);
    const limiter = rule ? limiters.of(rule, rules.version) : undefined;
    if (!rule || !limiter) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `the descriptor matches no limited rule in domain '${body.domain}'`);
    await whenReady(ctx.deps.sluice.redis, 2_000);
    // The same identity and hashing the decision service uses, so this clears exactly its counter.
    await limiter.reset(descriptorIdentity(entries), ruleKeyOptions(entries, rules.slotKey));
    await record(ctx, req, 'decision.reset', { target: rule.name, details: { domain: body.domain, keys: entries.map((e) => e.key) } });
    send(res, 200, resetResponseSchema, { domain: body.domain, rule: rule.name, reset: true });
  });
  return router;
}
