// POST /v1/queues/:queue/jobs — admit a job into its key's lane: 202 Accepted with where to look it up,
// or 429 with the exact Retry-After when the lane is full or the wait would be too long; 503 while the
// queue drains. Under authentication the lane is the tenant's (or `<tenant>/<key>`) at its plan's limits.
import { Router, type Request, type Response } from 'express';
import { jsonBody, parseBody, requireJson } from '../body.js';
import type { AppDeps } from '../deps.js';
import { markRedisAnswered } from '../redis-outage-log.js';
import { DEFAULT_BODY_LIMIT_BYTES, DEFAULT_JSON_MAX_DEPTH } from '../deps.js';
import { SluiceError } from '../../errors.js';
import { queueRefusalFacts } from '../../headers/queue-headers.js';
import type { QueueThrottles } from '../queue-throttles.js';
import { sendRefusal } from '../refusal.js';
import { requestInfo } from '../request-info.js';
import { identityHash } from '../rule-decisions.js';
import { submitBodySchema } from '../schemas.js';
import type { QueueRule } from '../../rules/index.js';
import type { ControlCache } from '../../admin/control-cache.js';
import type { Tenant } from '../../auth/tenant-keys.js';
import { tenantAuth, tenantOf } from '../tenant-auth.js';
import { checkCallbackUrl } from '../../callbacks/allow.js';

export function submitRoute(deps: AppDeps, throttles: QueueThrottles, control: ControlCache): Router {
  const router = Router();
  router.post('/v1/queues/:queue/jobs', tenantAuth(deps), requireJson(), jsonBody(deps.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES, deps.jsonMaxDepth ?? DEFAULT_JSON_MAX_DEPTH), async (req: Request, res: Response) => {
    const tenant = tenantOf(res);
    const rules = deps.rules.current();
    const queueName = String(req.params.queue);
    const queue = rules.queue(queueName);
    if (!queue) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no queue '${queueName}'`);
    if (control.control(queue.name).draining) {
      res.setHeader('Retry-After', '60');
      throw new SluiceError('SLUICE_ERR_DRAINING', `queue '${queue.name}' is draining: it takes no new jobs`, { details: { reason: 'draining' } });
    }
    const body = parseBody(submitBodySchema, req);
    const key = laneKey(queue, body.key, req, deps, tenant);
    if (key === undefined) {
      throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', `queue '${queue.name}' takes its key from ${describeSource(queue)}, and the request has none`, {
        details: [{ path: queue.key.type === 'body' ? 'key' : '(request)', message: `required: the lane key (${describeSource(queue)})`, code: 'invalid_type' }],
      });
    }
    // Checked before admission: a refused callback takes no place in the lane.
    let callback: { callbackUrl: string; callbackPrivateAllowed: boolean } | undefined;
    if (body.callback_url !== undefined) {
      const check = await checkCallbackUrl(body.callback_url, rules.callbacks);
      if (!check.ok) {
        throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', `invalid request body: callback_url: ${check.message}`, {
          details: [{ path: 'callback_url', message: check.message, code: 'custom' }],
        });
      }
      callback = { callbackUrl: check.url, callbackPrivateAllowed: check.privateAllowed };
    }
    const throttle = throttles.of(queue);
    const limits = throttle.limitsOf(throttle.keys.laneId(key), throttle.planName(tenant?.plan));
    // A cost no lane can ever hold is a bad request for this queue: say so with the field, as for the schema's issues.
    if (body.cost !== undefined && body.cost > limits.capacity) {
      const message = `${body.cost} is larger than the lane capacity ${limits.capacity} of queue '${queue.name}'; it could never be admitted`;
      throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', `invalid request body: cost: ${message}`, { details: [{ path: 'cost', message, code: 'too_big' }] });
    }
    const result = await throttle.submit(key, body.payload, {
      ...(body.cost !== undefined ? { cost: body.cost } : {}),
      // Idempotency keys are the tenant's own: the same key from two tenants is two jobs.
      ...(body.idempotencyKey !== undefined ? { id: tenant ? `${tenant.name}\u0000${body.idempotencyKey}` : body.idempotencyKey } : {}),
      ...(tenant ? { tenant: tenant.name, ...(tenant.plan !== undefined ? { plan: tenant.plan } : {}) } : {}),
      ...(callback ?? {}),
    });
    markRedisAnswered(res);
    if (!result.admitted) {
      const refusal = { queue: queue.name, capacity: result.capacity, ratePerSecond: limits.ratePerSecond, retryAfterMs: result.retryAfterMs };
      deps.logger.info(
        { event: 'refused', queue: queue.name, identity: identityHash(key, (v) => deps.sluice.keys.hash(v)), rulesVersion: rules.version, reason: result.reason },
        'submit refused',
      );
      // The body's retry_after and the header are one number, computed once from the refusal.
      sendRefusal(res, {
        facts: queueRefusalFacts(refusal, Date.now()),
        selection: deps.headers ?? rules.responseHeaders,
        reason: result.reason,
        message: (retryAfter) =>
          result.reason === 'queue_full'
            ? `queue '${queue.name}' is full for this key (capacity ${result.capacity}); retry in ${retryAfter} s`
            : result.reason === 'quota_exhausted'
              ? `the ${result.quota!.period === 'day' ? 'daily' : 'monthly'} ${result.quota!.scope === 'key' ? "key's" : "queue's"} quota of queue '${queue.name}' (${result.quota!.limit} ${result.quota!.unit}) is used up; it resets in ${retryAfter} s`
              : `the wait in queue '${queue.name}' would be longer than allowed; retry in ${retryAfter} s`,
      });
      return;
    }
    const location = `/v1/queues/${encodeURIComponent(queue.name)}/jobs/${encodeURIComponent(result.jobId)}`;
    res.status(202).location(location).json({
      id: result.jobId,
      queue: queue.name,
      state: 'queued',
      startsAt: new Date(result.startsAtMs).toISOString(),
      position: result.position,
      ...(result.duplicate ? { duplicate: true } : {}),
    });
  });
  return router;
}

/**
 * The lane key of a submit, from where the queue says: the tenant, the body, or an identity source of
 * the request. Under authentication every key is the tenant's: `<tenant>` or `<tenant>/<value>`, so no
 * tenant can name another's lane.
 */
function laneKey(queue: QueueRule, bodyKey: string | undefined, req: Request, deps: AppDeps, tenant: Tenant | undefined): string | undefined {
  if (queue.key.type === 'tenant') return tenant?.name;
  const value = queue.key.type === 'body' ? bodyKey : sourceValue(queue, req, deps);
  if (value === undefined) return undefined;
  return tenant ? `${tenant.name}/${value}` : value;
}

function sourceValue(queue: QueueRule, req: Request, deps: AppDeps): string | undefined {
  const source = queue.key.type === 'header' ? `header:${queue.key.name}` : queue.key.type;
  // api_key (and secret headers) come back hashed: the raw secret never reaches Redis or a log.
  return deps.rules.current().requestSource(source, requestInfo(req), { hash: (v) => deps.sluice.keys.hash(v) });
}

function describeSource(queue: QueueRule): string {
  switch (queue.key.type) {
    case 'body':
      return "the body's `key`";
    case 'tenant':
      return 'the API key (its tenant)';
    case 'header':
      return `the ${queue.key.name} header`;
    case 'api_key':
      return 'the API key header';
    default:
      return `the request's ${queue.key.type}`;
  }
}
