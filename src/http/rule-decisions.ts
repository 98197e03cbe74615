// Deciding the rules a request (or a decision-service call) matched: one limiter per rule, cached per
// rules version; all-or-nothing charging (every enforcing rule decided, all charged only if all allow,
// in one script call: src/limiters/all-or-nothing.ts); shadow rules always decide and count but never refuse.
import { createHash } from 'node:crypto';
import { SluiceError } from '../errors.js';
import { limitAllWith, type AllDecisions, type LimitCall } from '../limiters/all-or-nothing.js';
import type { Decision } from '../limiters/decision.js';
import type { LimitCallOptions, Limiter } from '../limiters/limiter.js';
import type { Policy, PolicyInput } from '../limiters/policy.js';
import type { RuleOutcome } from '../metrics/metrics.js';
import { descriptorIdentity, entryIdentity, type DescriptorEntry, type Rule } from '../rules/index.js';

/** Makes limiters: the sluice instance's `limiter` (with the options the edge wants, such as the deny cache). */
export type LimiterFactory = (policy: PolicyInput | Policy) => Limiter;

/** A rule a request matched, with the descriptor that matched it (and its identity, when known). */
export interface RuleMatch {
  readonly rule: Rule;
  readonly entries: readonly DescriptorEntry[];
  /** descriptorIdentity(entries), worked out once per client by Rules.matchRequest's memo. */
  readonly identity?: string;
}

/** One matched rule's decision. */
export interface RuleDecision {
  rule: Rule;
  entries: readonly DescriptorEntry[];
  /** The limiter key (descriptor identity); may hold a client IP or user id: never log it raw. */
  identity: string;
  /** Undefined for an unlimited rule. */
  decision?: Decision;
  outcome: RuleOutcome;
  /** The limiter that decided (to release a concurrency lease). */
  limiter?: Limiter;
}

/** Limiters per rule, made once per rules version (a policy change gives a new limiter). */
export class RuleLimiters {
  private version = '';
  private readonly byName = new Map<string, Limiter>();

  constructor(private readonly make: LimiterFactory) {}

  of(rule: Rule, rulesVersion: string): Limiter | undefined {
    if (!rule.policy) return undefined;
    if (rulesVersion !== this.version) {
      this.byName.clear();
      this.version = rulesVersion;
    }
    let limiter = this.byName.get(rule.name);
    if (!limiter) {
      limiter = this.make(rule.policy);
      this.byName.set(rule.name, limiter);
    }
    return limiter;
  }
}

/**
 * Decides every match. Enforcing rules are all-or-nothing: every one is checked and all are charged
 * only if all allow, atomically in one script call when their keys share a slot (always on one Redis
 * node; on a cluster when `slotKey` puts them in the slot of one descriptor entry); across slots, each
 * is peeked and then charged, with the race docs/http-api.md describes. Shadow rules are charged and
 * counted independently and never refuse.
 *
 * A call it cannot make (a cost over a rule's limit, a closed instance) rejects, as an async function
 * would. The middleware uses decideRulesWith: the same, with callbacks and no promise per request.
 */
export function decideRules(
  matches: readonly RuleMatch[],
  limiters: RuleLimiters,
  rulesVersion: string,
  cost = 1,
  slotKey?: string,
): Promise<RulesDecided> {
  return new Promise<RulesDecided>((resolve, reject) => decideRulesWith(matches, limiters, rulesVersion, cost, slotKey, resolve, reject));
}

/** Every match's decision, and whether the request is allowed (no enforcing rule refused). */
export interface RulesDecided {
  allowed: boolean;
  results: RuleDecision[];
}

/**
 * decideRules with callbacks instead of a promise (the middleware's path: without shadow rules, no
 * promise per request). Exactly one of `done` and `failed` is called, once, maybe before this
 * returns; neither may throw.
 */
export function decideRulesWith(
  matches: readonly RuleMatch[],
  limiters: RuleLimiters,
  rulesVersion: string,
  cost: number,
  slotKey: string | undefined,
  done: (decided: RulesDecided) => void,
  failed: (error: unknown) => void,
): void {
  let results: RuleDecision[];
  let enforcing: RuleDecision[];
  let shadowDone: Promise<unknown> | undefined;
  let calls: LimitCall[];
  try {
    results = new Array<RuleDecision>(matches.length);
    for (let i = 0; i < matches.length; i++) {
      const m = matches[i]!;
      results[i] = { rule: m.rule, entries: m.entries, identity: m.identity ?? descriptorIdentity(m.entries), outcome: 'allowed', decision: undefined, limiter: undefined };
    }
    enforcing = [];
    let shadow: RuleDecision[] | undefined;
    for (const r of results) {
      r.limiter = limiters.of(r.rule, rulesVersion);
      if (!r.limiter) continue; // unlimited
      checkRuleCost(cost, r.limiter, r.rule.name);
      if (r.rule.shadowMode) (shadow ??= []).push(r);
      else enforcing.push(r);
    }
    // One options object per distinct slot in a request (usually one), not one per rule.
    const options = new CallOptions(cost, slotKey);
    shadowDone = shadow
      ? Promise.all(
          shadow.map((r) =>
            r.limiter!.limit(r.identity, options.of(r.entries)).then((d) => {
              r.decision = d;
            }),
          ),
        )
      : undefined;
    calls = new Array<LimitCall>(enforcing.length);
    for (let i = 0; i < enforcing.length; i++) {
      const r = enforcing[i]!;
      calls[i] = { limiter: r.limiter!, key: r.identity, options: options.of(r.entries) };
    }
  } catch (error) {
    return failed(error);
  }
  const rules = results;
  const enforced = enforcing;
  if (!shadowDone) return limitAllWith(calls, (all) => done(finishRules(rules, enforced, all)), failed);
  // Handled now, so a shadow rule's failure before the enforcing rules are decided is never an
  // unhandled rejection; the chain below still sees it.
  const shadows = shadowDone;
  shadows.catch(() => undefined);
  limitAllWith(
    calls,
    (all) => void shadows.then(() => done(finishRules(rules, enforced, all)), failed),
    failed,
  );
}

/** The enforcing rules' decisions set on their results; each rule's outcome; allowed unless an enforcing rule refused. */
function finishRules(results: RuleDecision[], enforcing: readonly RuleDecision[], all: AllDecisions): RulesDecided {
  for (let i = 0; i < enforcing.length; i++) enforcing[i]!.decision = all.decisions[i];
  let allowed = true;
  for (const r of results) {
    if (!r.decision) continue;
    r.outcome = outcomeOf(r.decision, r.rule.shadowMode);
    if (!r.rule.shadowMode && !r.decision.allowed) allowed = false;
  }
  return { allowed, results };
}

/**
 * The call options of a request's rules: ruleKeyOptions with the request's cost, made once per slot
 * value (the rules of one client share their slot entry), without the closure, spread and arrays of
 * building them per rule.
 */
class CallOptions {
  private readonly plain: LimitCallOptions;
  private slotValue: string | undefined;
  private slotted: LimitCallOptions | undefined;

  constructor(
    private readonly cost: number,
    private readonly slotKey: string | undefined,
  ) {
    this.plain = { cost, sensitive: true };
  }

  of(entries: readonly DescriptorEntry[]): LimitCallOptions {
    if (this.slotKey === undefined) return this.plain;
    let entry: DescriptorEntry | undefined;
    for (const e of entries) {
      if (e.key === this.slotKey) {
        entry = e;
        break;
      }
    }
    if (!entry) return this.plain;
    if (this.slotted === undefined || this.slotValue !== entry.value) {
      this.slotValue = entry.value;
      this.slotted = { cost: this.cost, sensitive: true, slot: entryIdentity(entry) };
    }
    return this.slotted;
  }
}

/**
 * How a rule's limiter keys a descriptor: always by its hash (descriptor values come from requests and
 * other services: an API key, a user id), and in the slot of its `slotKey` entry when it has one, so the
 * rules of one client share a cluster slot and one script call. Every call on a rule's key (decide,
 * release, reset) must use these.
 */
export function ruleKeyOptions(entries: readonly DescriptorEntry[], slotKey: string | undefined): LimitCallOptions {
  if (slotKey === undefined) return { sensitive: true };
  const entry = entries.find((e) => e.key === slotKey);
  return entry ? { sensitive: true, slot: entryIdentity(entry) } : { sensitive: true };
}

/** A cost no call could ever be allowed under is a bad request (SLUICE_ERR_INVALID_COST), not a silent partial charge. */
export function checkRuleCost(cost: number, limiter: Limiter, rule: string): void {
  if (cost <= limiter.maxCost) return;
  throw new SluiceError('SLUICE_ERR_INVALID_COST', `cost: ${cost} is larger than the limit ${limiter.maxCost} of rule '${rule}'`, {
    details: [{ path: 'cost', message: `larger than the limit ${limiter.maxCost} of rule '${rule}'`, code: 'too_big' }],
  });
}

/** How a rule's decision is counted in the metrics. */
export function outcomeOf(d: Decision, shadow: boolean): RuleOutcome {
  if (d.failure) return d.failure;
  if (d.allowed) return 'allowed';
  return shadow ? 'shadow-refused' : 'refused';
}

/** A short hash of an identity, for logs (never the identity itself); keyed by `hash` (the instance's HMAC) when given. */
export function identityHash(identity: string, hash?: (value: string) => string): string {
  return hash ? hash(identity).slice(0, 16) : createHash('sha256').update(identity).digest('base64url').slice(0, 16);
}
