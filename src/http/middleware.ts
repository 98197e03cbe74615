// The decision middleware for any express app: decides the rules a request matches (or one policy),
// sets truthful rate-limit headers, and answers 429 with Retry-After when an enforcing rule refuses.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { Limiter } from '../limiters/limiter.js';
import type { Policy, PolicyInput } from '../limiters/policy.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Sluice } from '../sluice.js';
import type { DescriptorEntry, Rule, Rules } from '../rules/index.js';
import { decisionFacts, serialiseHeaders, type HeaderInput, type HeaderSelection } from '../headers/headers.js';
import { sendRefusal } from './refusal.js';
import { requestInfo } from './request-info.js';
import { RuleLimiters, decideRules, identityHash, type RuleDecision } from './rule-decisions.js';
import { rulesSourceOf, type RulesSource } from '../rules/rules-source.js';

export interface MiddlewareOptions {
  /** Rules (or a watcher of a rules file): the request's descriptors are matched in the `http:` domain. */
  rules?: Rules | RulesSource;
  /** Or one policy for every request, keyed by `identify`. */
  policy?: PolicyInput | Policy;
  /** With `policy`: the key of a request (default: the client IP as express sees it, `req.ip`). */
  identify?: (req: Request) => string | undefined;
  /** With `policy`: the key is a secret (an API key): it is hashed before it reaches Redis. */
  sensitiveKey?: boolean;
  /** The cost of a request (default 1). */
  cost?: (req: Request) => number;
  /** Which rate-limit header sets to send (default: Retry-After, IETF draft-11, legacy X-RateLimit-*). */
  headers?: HeaderSelection;
  metrics?: Metrics;
  /** Refusals are logged here (hashed identity, rule, rules version, reason). */
  logger?: Logger;
}

/** What the middleware needs from the sluice instance. */
interface MiddlewareDeps {
  limiter(policy: PolicyInput | Policy): Limiter;
  /** Hashes secret values with the instance's key builder (HMAC when configured). */
  hash(value: string): string;
}

/**
 * Decision middleware for any express app, built from a sluice instance: the rules a request
 * matches (`rules`) or one `policy` per request key; sets the rate-limit headers and answers 429
 * with Retry-After when a rule refuses.
 */
export function decisionMiddleware(sluice: Pick<Sluice, 'limiter' | 'keys'>, options: MiddlewareOptions): RequestHandler {
  const deps: MiddlewareDeps = { limiter: (policy) => sluice.limiter(policy), hash: (v) => sluice.keys.hash(v) };
  const decide = options.rules
    ? rulesMode(deps, rulesSourceOf(options.rules))
    : options.policy
      ? policyMode(deps, options.policy, options.identify ?? ((req) => req.ip), options.sensitiveKey === true)
      : undefined;
  if (!decide) throw new TypeError('middleware: give `rules` or `policy`');

  return (req: Request, res: Response, next: NextFunction) => {
    const cost = options.cost?.(req) ?? 1;
    decide(req, cost).then(
      ({ allowed, results, version, headers }) => {
        const selection = options.headers ?? headers;
        for (const r of results) options.metrics?.recordRule(r.rule.name, r.outcome);
        const enforced = results.filter((r) => r.decision && !r.rule.shadowMode);
        const inputs: HeaderInput[] = enforced.map((r) => ({ decision: r.decision!, policy: r.rule.policy!, name: r.rule.name, cost }));
        const facts = decisionFacts(inputs, Date.now());
        if (!allowed) {
          const refusing = enforced.filter((r) => !r.decision!.allowed);
          logRefusals(refusing, options.logger, version, deps.hash);
          const rules = refusing.map((r) => r.rule.name).join(', ');
          sendRefusal(res, { facts, selection, message: (retryAfter) => `rate limit exceeded (${rules}); retry in ${retryAfter} s` });
          return;
        }
        for (const [name, value] of serialiseHeaders(facts, selection)) res.setHeader(name, value);
        // Concurrency leases are held for the life of the response.
        const leases = enforced.filter((r) => r.decision!.leaseId);
        if (leases.length) {
          res.once('close', () => {
            for (const r of leases) void r.limiter!.release(r.identity, r.decision!.leaseId!, { sensitive: true }).catch(() => undefined);
          });
        }
        next();
      },
      (error: unknown) => next(error),
    );
  };
}

type Decide = (
  req: Request,
  cost: number,
) => Promise<{ allowed: boolean; results: RuleDecision[]; version: string; headers: HeaderSelection }>;

function rulesMode(deps: MiddlewareDeps, source: RulesSource): Decide {
  const limiters = new RuleLimiters((p) => deps.limiter(p));
  return async (req, cost) => {
    const rules = source.current();
    const matches = rules.matchRequest(requestInfo(req), { hash: deps.hash });
    const { allowed, results } = await decideRules(matches, limiters, rules.version, cost);
    return { allowed, results, version: rules.version, headers: rules.responseHeaders };
  };
}

function policyMode(deps: MiddlewareDeps, input: PolicyInput | Policy, identify: (req: Request) => string | undefined, sensitive: boolean): Decide {
  const limiter = deps.limiter(input);
  const rule: Rule = {
    id: limiter.namespace,
    name: limiter.namespace,
    domain: 'policy',
    policy: limiter.policy,
    shadowMode: false,
    unlimited: false,
    source: { file: '', line: 0, column: 0 },
  };
  const limiters = new RuleLimiters(() => limiter);
  return async (req, cost) => {
    const key = identify(req);
    if (key === undefined || key === '') return { allowed: true, results: [], version: 'policy', headers: {} };
    // A secret key is hashed here, so the descriptor identity (and Redis) never holds it.
    const entries: DescriptorEntry[] = [{ key: 'id', value: sensitive ? deps.hash(key) : key }];
    const { allowed, results } = await decideRules([{ rule, entries }], limiters, 'policy', cost);
    return { allowed, results, version: 'policy', headers: {} };
  };
}

/** Each refusing rule, logged with the hashed identity (never the identity itself). */
function logRefusals(refusing: RuleDecision[], logger: Logger | undefined, version: string, hash: (v: string) => string): void {
  for (const r of refusing) {
    logger?.info(
      {
        event: 'refused',
        rule: r.rule.name,
        identity: identityHash(r.identity, hash),
        rulesVersion: version,
        algorithm: r.rule.policy?.algorithm,
        reason: r.decision!.failure ?? 'limit_exceeded',
      },
      'request refused',
    );
  }
}
