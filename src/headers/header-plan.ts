// HeaderPlan: the rate-limit headers of one rule (or policy) with everything a decision does not
// change worked out once — the quoted name, the quota, the window, the whole `RateLimit-Policy` item
// — so a request only formats its few numbers (remaining, the next unit, the reset) and sets the
// headers it sends. Byte for byte what serialiseHeaders(decisionFacts(...)) sends
// (test/unit/headers/header-plan.test.ts holds the two equal over generated decisions).
import type { Decision } from '../limiters/decision.js';
import type { Policy } from '../limiters/policy.js';
import { DEFAULT_HEADER_SELECTION, sfString, type HeaderSelection } from './headers.js';
import { quotaView, type QuotaView } from './quota.js';
import { retryAfterSeconds } from './retry-after.js';

/** A header selection with every set decided (the defaults filled in). */
export type ResolvedSelection = Readonly<Required<HeaderSelection>>;

/** The selection with its defaults, worked out once per middleware (or rules version), not per request. */
export function resolveSelection(selection: HeaderSelection | undefined): ResolvedSelection {
  return Object.freeze({ ...DEFAULT_HEADER_SELECTION, ...selection });
}

export class HeaderPlan {
  /** `"<name>";q=<quota>[;qu="concurrent-requests"][;w=<window>]` (draft-11's RateLimit-Policy item). */
  readonly draft11Policy: string;
  /** `"<name>";r=` (the start of draft-11's RateLimit item). */
  readonly draft11Prefix: string;
  /** `<quota>;w=<window>` (draft-07's RateLimit-Policy item), undefined without a whole-second window. */
  readonly draft07Policy: string | undefined;
  /** The quota as a string (`X-RateLimit-Limit`). */
  readonly quotaText: string;
  readonly quota: number;

  /** @param limit the policy's size: every decision's `limit` (the limiter's `maxCost`). */
  constructor(
    readonly name: string,
    readonly policy: Policy,
    limit: number,
  ) {
    // The window and the unit depend on the policy alone: read them from any decision's view.
    const probe: Decision = { allowed: true, limit, remaining: limit, retryAfterMs: 0, resetAtMs: 0 };
    const view = quotaView({ decision: probe, policy, name }, 0)!;
    this.quota = limit;
    this.quotaText = String(limit);
    let item = `${sfString(name)};q=${limit}`;
    if (view.unit !== 'requests') item += `;qu=${sfString(view.unit)}`;
    if (view.windowSeconds !== undefined) item += `;w=${view.windowSeconds}`;
    this.draft11Policy = item;
    this.draft11Prefix = `${sfString(name)};r=`;
    this.draft07Policy = view.windowSeconds === undefined ? undefined : `${limit};w=${view.windowSeconds}`;
  }
}

/** One decision of a request, with the plan of the rule that made it. */
export interface PlannedDecision {
  decision: Decision;
  plan: HeaderPlan;
  cost: number;
}

/** Sets one header. */
export type SetHeader = (name: string, value: string) => void;

/**
 * The Retry-After seconds of the decisions of one request (the longest wait among those that refused,
 * fail-closed ones included), or undefined when none refused.
 */
export function plannedRetryAfter(decisions: readonly PlannedDecision[]): number | undefined {
  let longest = -1;
  for (const d of decisions) if (!d.decision.allowed && d.decision.retryAfterMs > longest) longest = d.decision.retryAfterMs;
  return longest < 0 ? undefined : retryAfterSeconds(longest);
}

interface Viewed {
  d: PlannedDecision;
  view: QuotaView;
  index: number;
}

/** Most restrictive first, as byRestriction orders them (refused, lowest remaining, longest retry, input order). */
function restrictive(a: Viewed, b: Viewed): number {
  const x = a.d.decision;
  const y = b.d.decision;
  return Number(x.allowed) - Number(y.allowed) || x.remaining - y.remaining || y.retryAfterMs - x.retryAfterMs || a.index - b.index;
}

/**
 * Sets the selected rate-limit headers of `decisions` (made at `nowMs`, epoch ms): Retry-After when
 * `retryAfter` is given and selected, then the IETF fields, then the legacy ones — what
 * serialiseHeaders(decisionFacts(...)) would send, in the same order.
 */
export function writePlannedHeaders(set: SetHeader, decisions: readonly PlannedDecision[], nowMs: number, selection: ResolvedSelection, retryAfter: number | undefined): void {
  if (retryAfter !== undefined && selection.retryAfter) set('Retry-After', String(retryAfter));
  const views: Viewed[] = [];
  for (let i = 0; i < decisions.length; i++) {
    const d = decisions[i]!;
    if (d.decision.failure) continue;
    views.push({ d, view: quotaView({ decision: d.decision, policy: d.plan.policy, name: d.plan.name, cost: d.cost }, nowMs)!, index: i });
  }
  if (views.length === 0) return;
  if (views.length > 1) sortInPlace(views);
  const top = views[0]!;
  if (selection.ietf === 'draft-11') {
    let policy = top.d.plan.draft11Policy;
    let limit = draft11Item(top);
    for (let i = 1; i < views.length; i++) {
      policy += `, ${views[i]!.d.plan.draft11Policy}`;
      limit += `, ${draft11Item(views[i]!)}`;
    }
    set('RateLimit-Policy', policy);
    set('RateLimit', limit);
  } else if (selection.ietf === 'draft-07') {
    const seen = new Set<number>();
    const items: string[] = [];
    for (const v of views) {
      const item = v.d.plan.draft07Policy;
      if (item === undefined || seen.has(v.d.plan.quota)) continue;
      seen.add(v.d.plan.quota);
      items.push(item);
    }
    if (items.length) set('RateLimit-Policy', items.join(', '));
    set('RateLimit', `limit=${top.d.plan.quota}, remaining=${top.view.remaining}, reset=${secondsUntil(top.view.resetAtMs, nowMs)}`);
  }
  if (selection.legacy) {
    set('X-RateLimit-Limit', top.d.plan.quotaText);
    set('X-RateLimit-Remaining', String(top.view.remaining));
    set('X-RateLimit-Reset', String(selection.legacyReset === 'epoch-seconds' ? Math.ceil(top.view.resetAtMs / 1000) : secondsUntil(top.view.resetAtMs, nowMs)));
  }
}

/**
 * `views` ordered by `restrictive`, by insertion: a request has a few decisions, and Array.prototype.sort
 * copies its array into a work array first (a tenth of what a three-rule request allocated). Stable, as
 * sort is (and `restrictive` breaks ties by input order anyway).
 */
function sortInPlace(views: Viewed[]): void {
  for (let i = 1; i < views.length; i++) {
    const v = views[i]!;
    let j = i - 1;
    while (j >= 0 && restrictive(views[j]!, v) > 0) {
      views[j + 1] = views[j]!;
      j--;
    }
    views[j + 1] = v;
  }
}

function draft11Item(v: Viewed): string {
  const next = v.view.nextSeconds;
  return next === undefined ? v.d.plan.draft11Prefix + v.view.remaining : `${v.d.plan.draft11Prefix}${v.view.remaining};t=${next}`;
}

function secondsUntil(atMs: number, nowMs: number): number {
  return Math.max(0, Math.ceil((atMs - nowMs) / 1000));
}
