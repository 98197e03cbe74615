// The decision middleware for any express app: decides the rules a request matches (or one policy),
// sets truthful rate-limit headers, and answers 429 with Retry-After when an enforcing rule refuses.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { Policy, PolicyInput } from '../limiters/policy.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Sluice } from '../sluice.js';
import { descriptorIdentity, type Rule, type Rules } from '../rules/index.js';
import type { HeaderSelection } from '../headers/headers.js';
import { HeaderPlan, plannedRetryAfter, resolveSelection, writePlannedHeaders, type PlannedDecision, type ResolvedSelection } from '../headers/header-plan.js';
import { retryAfterSeconds } from '../headers/retry-after.js';
import type { Decision } from '../limiters/decision.js';
import type { Limiter, LimiterOptions } from '../limiters/limiter.js';
import { IdentityCache } from './identity-cache.js';
import { sendRefusalWith } from './refusal.js';
import { RefusalLog } from './refusal-log.js';
import { requestInfo } from './request-info.js';
import { RuleLimiters, checkRuleCost, decideRulesWith, identityHash, outcomeOf, ruleKeyOptions, type RuleDecision, type RulesDecided } from './rule-decisions.js';
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
  /**
   * Refusals are logged here (hashed identity, rule, rules version, reason): the first refusal of a
   * client by a rule in each 10 s, then one `refusals_suppressed` line per rule for the rest
   * (docs/operations.md, Logs). Every refusal is counted in `metrics`.
   */
  logger?: Logger;
  /**
   * The deny cache (default true): a key Redis refused until T is refused in this process until T
   * without a Redis call. It never admits anything (docs/algorithms.md, "Deny cache"); false sends
   * every request to Redis.
   */
  denyCache?: boolean;
}

/** What the middleware needs from the sluice instance. */
interface MiddlewareDeps {
  limiter(policy: PolicyInput | Policy, options?: LimiterOptions): Limiter;
  /** Hashes secret values with the instance's key builder (HMAC when configured). */
  hash(value: string): string;
}

/** What the middleware does per request, once a mode is chosen. */
type Handle = (req: Request, res: Response, next: NextFunction, cost: number) => void;

/**
 * Decision middleware for any express app, built from a sluice instance: the rules a request
 * matches (`rules`) or one `policy` per request key; sets the rate-limit headers and answers 429
 * with Retry-After when a rule refuses.
 *
 * Everything a request does not change is worked out here, once: the limiter, the header strings
 * of each policy (HeaderPlan), the header selection; a request key's identity (and its hash) once
 * per key (IdentityCache), its Redis key once per key (the limiter's key cache).
 */
export function decisionMiddleware(sluice: Pick<Sluice, 'limiter' | 'keys'>, options: MiddlewareOptions): RequestHandler {
  // Secret values (API keys in the rules' descriptors) are hashed once per value, not per request.
  const hashes = new IdentityCache((v) => sluice.keys.hash(v));
  const deps: MiddlewareDeps = { limiter: (policy, o) => sluice.limiter(policy, o), hash: (v) => hashes.of(v) };
  const limiterOptions: LimiterOptions = { denyCache: options.denyCache !== false };
  const refusals = options.logger ? new RefusalLog(options.logger, 'request refused') : undefined;
  const handle = options.rules
    ? rulesMode(deps, rulesSourceOf(options.rules), options, limiterOptions, refusals)
    : options.policy
      ? policyMode(deps, options.policy, options, limiterOptions, refusals)
      : undefined;
  if (!handle) throw new TypeError('middleware: give `rules` or `policy`');
  const costOf = options.cost;
  return (req: Request, res: Response, next: NextFunction) => {
    let cost = 1;
    try {
      if (costOf) cost = costOf(req);
      handle(req, res, next, cost);
    } catch (error) {
      next(error);
    }
  };
}

/** One policy per request key: no rule matching, no arrays, one limiter call. */
function policyMode(deps: MiddlewareDeps, input: PolicyInput | Policy, options: MiddlewareOptions, limiterOptions: LimiterOptions, refusals: RefusalLog | undefined): Handle {
  const limiter = deps.limiter(input, limiterOptions);
  const name = limiter.namespace;
  const identify = options.identify ?? ((req: Request) => req.ip);
  const sensitive = options.sensitiveKey === true;
  // A secret key is hashed here, so the descriptor identity (and Redis) never holds it.
  const identities = new IdentityCache((key) => descriptorIdentity([{ key: 'id', value: sensitive ? deps.hash(key) : key }]));
  const plan = new HeaderPlan(name, limiter.policy, limiter.maxCost);
  const selection = resolveSelection(options.headers);
  const metrics = options.metrics;
  const concurrency = limiter.policy.algorithm === 'concurrency';
  return (req, res, next, cost) => {
    const key = identify(req);
    if (key === undefined || key === '') {
      next();
      return;
    }
    checkRuleCost(cost, limiter, name);
    const identity = identities.of(key);
    // Callbacks, not a promise: one decision per request, answered straight from the script's reply
    // (or at once, when the deny cache refuses). `done` never throws: a batch is answered in one loop.
    limiter.limitWith(
      identity,
      { cost, sensitive: true },
      (decision) => {
        try {
          decided(res, next, decision, identity, cost);
        } catch (error) {
          next(error);
        }
      },
      next,
    );
  };

  function decided(res: Response, next: NextFunction, decision: Decision, identity: string, cost: number): void {
    metrics?.recordRule(name, outcomeOf(decision, false));
    const planned: PlannedDecision[] = [{ decision, plan, cost }];
    if (!decision.allowed) {
      refusals?.refused(name, identity, () => ({
        rule: name,
        identity: identityHash(identity, deps.hash),
        rulesVersion: 'policy',
        algorithm: limiter.policy.algorithm,
        reason: decision.failure ?? 'limit_exceeded',
      }));
      refuse(res, planned, selection, name);
      return;
    }
    writePlannedHeaders(setOn(res), planned, Date.now(), selection, undefined);
    // A concurrency lease is held for the life of the response.
    if (concurrency && decision.leaseId) {
      const leaseId = decision.leaseId;
      res.once('close', () => void limiter.release(identity, leaseId, { sensitive: true }).catch(() => undefined));
    }
    next();
  }
}

/** The rules a request matches, decided all-or-nothing (decideRules). */
function rulesMode(deps: MiddlewareDeps, source: RulesSource, options: MiddlewareOptions, limiterOptions: LimiterOptions, refusals: RefusalLog | undefined): Handle {
  const limiters = new RuleLimiters((p) => deps.limiter(p, limiterOptions));
  // A plan per limiter: limiters are made once per rule and rules version, so plans are too.
  const plans = new WeakMap<Limiter, HeaderPlan>();
  const planOf = (r: RuleDecision): HeaderPlan => {
    let plan = plans.get(r.limiter!);
    if (!plan) {
      plan = new HeaderPlan(r.rule.name, r.rule.policy!, r.limiter!.maxCost);
      plans.set(r.limiter!, plan);
    }
    return plan;
  };
  let selectionFor: Rules | undefined;
  let selection: ResolvedSelection = resolveSelection(options.headers);
  const metrics = options.metrics;
  const hash = { hash: deps.hash };
  return (req, res, next, cost) => {
    const rules = source.current();
    if (selectionFor !== rules) {
      selection = resolveSelection(options.headers ?? rules.responseHeaders);
      selectionFor = rules;
    }
    const sel = selection;
    const matches = rules.matchRequest(requestInfo(req), hash);
    // Callbacks, not a promise chain: no promise per request without shadow rules. `decided` never
    // throws (an error goes to next): decideRulesWith's callbacks must not.
    decideRulesWith(
      matches,
      limiters,
      rules.version,
      cost,
      rules.slotKey,
      (d) => {
        try {
          decided(res, next, d, rules, sel, cost);
        } catch (error) {
          next(error);
        }
      },
      next,
    );
  };

  /** What the rules decided becomes the answer: headers and next(), or the 429. */
  function decided(res: Response, next: NextFunction, { allowed, results }: RulesDecided, rules: Rules, sel: ResolvedSelection, cost: number): void {
    const planned: PlannedDecision[] = [];
    let leases: RuleDecision[] | undefined;
    for (const r of results) {
      metrics?.recordRule(r.rule.name, r.outcome);
      if (!r.decision || r.rule.shadowMode) continue;
      planned.push({ decision: r.decision, plan: planOf(r), cost });
      if (r.decision.leaseId) (leases ??= []).push(r);
    }
    if (!allowed) {
      const refusing = results.filter((r) => r.decision && !r.rule.shadowMode && !r.decision.allowed);
      if (refusals) logRefusals(refusals, refusing, rules.version, deps.hash);
      refuse(res, planned, sel, refusing.map((r) => r.rule.name).join(', '));
      return;
    }
    writePlannedHeaders(setOn(res), planned, Date.now(), sel, undefined);
    // Concurrency leases are held for the life of the response.
    if (leases) {
      const held = leases;
      const slotKey = rules.slotKey;
      res.once('close', () => {
        for (const r of held) void r.limiter!.release(r.identity, r.decision!.leaseId!, ruleKeyOptions(r.entries, slotKey)).catch(() => undefined);
      });
    }
    next();
  }
}

/** The 429: Retry-After always (a client told "no" is told when), the selected headers, the JSON body. */
function refuse(res: Response, decided: readonly PlannedDecision[], selection: ResolvedSelection, rules: string): void {
  const retryAfter = plannedRetryAfter(decided) ?? retryAfterSeconds(0);
  const headers: string[] = [];
  writePlannedHeaders((name, value) => void headers.push(name, value), decided, Date.now(), withRetryAfter(selection), retryAfter);
  sendRefusalWith(res, headers, retryAfter, undefined, `rate limit exceeded (${rules}); retry in ${retryAfter} s`);
}

/** The selection with Retry-After on, made once per selection (a refusal always sends it). */
const retryAfterOn = new WeakMap<ResolvedSelection, ResolvedSelection>();
function withRetryAfter(selection: ResolvedSelection): ResolvedSelection {
  if (selection.retryAfter) return selection;
  let on = retryAfterOn.get(selection);
  if (!on) {
    on = Object.freeze({ ...selection, retryAfter: true });
    retryAfterOn.set(selection, on);
  }
  return on;
}

function setOn(res: Response): (name: string, value: string) => void {
  return (name, value) => void res.setHeader(name, value);
}

/** Each refusing rule, through the refusal log (the hashed identity, never the identity itself). */
function logRefusals(log: RefusalLog, refusing: RuleDecision[], version: string, hash: (v: string) => string): void {
  for (const r of refusing) {
    log.refused(r.rule.name, r.identity, () => ({
      rule: r.rule.name,
      identity: identityHash(r.identity, hash),
      rulesVersion: version,
      algorithm: r.rule.policy?.algorithm,
      reason: r.decision!.failure ?? 'limit_exceeded',
    }));
  }
}
