// POST /v1/decisions — the decision service for other languages (Envoy style): the descriptors of a
// call in a domain, one status per descriptor, all-or-nothing across the rules that enforce.
import { Router, type Request, type Response } from 'express';
import { jsonBody, parseBody, requireJson } from '../body.js';
import type { AppDeps } from '../deps.js';
import { markRedisAnswered } from '../redis-outage-log.js';
import { DEFAULT_BODY_LIMIT_BYTES, DEFAULT_JSON_MAX_DEPTH } from '../deps.js';
import { SluiceError } from '../../errors.js';
import { refusalSeconds } from '../../headers/retry-after.js';
import { RuleLimiters, decideRules, identityHash, ruleKeyOptions } from '../rule-decisions.js';
import { RefusalLog } from '../refusal-log.js';
import { decisionBodySchema, releaseBodySchema } from '../schemas.js';
import { tenantAuth } from '../tenant-auth.js';
import { descriptorIdentity, type DescriptorEntry, type Rule } from '../../rules/index.js';

export function decisionsRoute(deps: AppDeps, limiters: RuleLimiters): Router {
  const router = Router();
  // The first refusal of a client by a rule per interval is a line; the rest are counted (refusal-log.ts).
  const refusals = new RefusalLog(deps.logger, 'decision refused');
  router.post('/v1/decisions', tenantAuth(deps), requireJson(), jsonBody(deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES, deps.jsonMaxDepth ?? DEFAULT_JSON_MAX_DEPTH), async (req: Request, res: Response) => {
    const body = parseBody(decisionBodySchema, req);
    const rules = deps.rules.current();
    if (!rules.domains.includes(body.domain)) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no domain '${body.domain}'`);
    const descriptors: DescriptorEntry[][] = body.descriptors.map((d) => ('entries' in d ? d.entries : [d]));
    const matched: { index: number; rule: Rule; entries: DescriptorEntry[] }[] = [];
    descriptors.forEach((entries, index) => {
      const rule = rules.matchDescriptor(body.domain, entries);
      if (rule) matched.push({ index, rule, entries });
    });
    const { allowed, results } = await decideRules(matched, limiters, rules.version, body.cost ?? 1, rules.slotKey);
    // Decisions answered by their fail mode are not Redis answering (they are counted in the metrics).
    if (results.some((r) => r.decision !== undefined) && results.every((r) => r.decision?.failure === undefined)) markRedisAnswered(res);
    const statuses: Record<string, unknown>[] = descriptors.map((entries) => ({ descriptor: entries, code: 'OK', rule: null }));
    results.forEach((r, i) => {
      deps.metrics.recordRule(r.rule.name, r.outcome);
      const d = r.decision;
      const over = d !== undefined && !d.allowed && !r.rule.shadowMode;
      statuses[matched[i]!.index] = {
        descriptor: r.entries,
        code: over ? 'OVER_LIMIT' : 'OK',
        rule: r.rule.name,
        ...(r.rule.shadowMode ? { shadow: true } : {}),
        ...(r.rule.unlimited ? { unlimited: true } : {}),
        ...(d
          ? {
              allowed: d.allowed,
              limit: d.limit,
              remaining: d.remaining,
              retry_after_ms: d.retryAfterMs,
              reset_at: new Date(d.resetAtMs).toISOString(),
              ...(d.leaseId ? { lease_id: d.leaseId } : {}),
              ...(d.failure ? { failure: d.failure } : {}),
            }
          : {}),
      };
      if (over) {
        refusals.refused(r.rule.name, r.identity, () => ({
          rule: r.rule.name,
          identity: identityHash(r.identity, (v) => deps.sluice.keys.hash(v)),
          rulesVersion: rules.version,
          reason: d.failure ?? 'limit_exceeded',
        }));
      }
    });
    // The same number a refusal's Retry-After would be (the middleware's 429): the longest wait of the enforcing rules that refused.
    const enforced = results.flatMap((r) => (r.decision && !r.rule.shadowMode ? [r.decision] : []));
    res.json({ allowed, ...(allowed ? {} : { retry_after: refusalSeconds(enforced) }), statuses });
  });
  router.post('/v1/decisions/release', tenantAuth(deps), requireJson(), jsonBody(deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES, deps.jsonMaxDepth ?? DEFAULT_JSON_MAX_DEPTH), async (req: Request, res: Response) => {
    const body = parseBody(releaseBodySchema, req);
    const rules = deps.rules.current();
    if (!rules.domains.includes(body.domain)) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no domain '${body.domain}'`);
    const entries = 'entries' in body.descriptor ? body.descriptor.entries : [body.descriptor];
    const rule = rules.matchDescriptor(body.domain, entries);
    const limiter = rule ? limiters.of(rule, rules.version) : undefined;
    if (!rule || !limiter || limiter.policy.algorithm !== 'concurrency') {
      throw new SluiceError('SLUICE_ERR_NOT_FOUND', `the descriptor matches no concurrency rule in domain '${body.domain}'`);
    }
    const released = await limiter.release(descriptorIdentity(entries), body.lease_id, ruleKeyOptions(entries, rules.slotKey));
    markRedisAnswered(res);
    res.json({ released, rule: rule.name });
  });
  return router;
}
