// Rate-limit response headers as pure functions of decisions: Retry-After, the IETF RateLimit
// fields (draft-11, the latest, and draft-07, the last different format) and the legacy X-RateLimit-*.
// One serialiser (serialiseHeaders) writes them from header facts, a decision's or a queue
// refusal's (queue-headers.ts), so both say the same things the same way.
//
// Which IETF draft: draft-ietf-httpapi-ratelimit-headers-11 (May 2026) keeps the wire format that
// draft-08 introduced (a String policy identifier; `q`, `qu`, `w`, `pk` on RateLimit-Policy; `r`, `t`,
// `pk` on RateLimit) and only re-words `r` as "available quota" and `t` as "effective window: the
// seconds within which the client can use no more than the available quota". So one serialiser
// serves drafts 08 to 11 byte for byte. The format these replaced is draft-07's (an Integer policy
// `100;w=60` and a Dictionary `RateLimit: limit=100, remaining=50, reset=5`), still emitted by
// common middleware; it is kept as its own function.
//
// Every value is true for the algorithm that decided (see quota.ts): a field a decision cannot know
// exactly is left out, never estimated.
import { byRestriction, quotaView, type HeaderInput, type QuotaView } from './quota.js';
import { refusalSeconds } from './retry-after.js';

/** The inputs and quota facts the header functions work from (see quota.ts). */
export type { HeaderInput, QuotaView } from './quota.js';
export { quotaView, byRestriction } from './quota.js';
export { retryAfterSeconds, refusalSeconds } from './retry-after.js';

/** One response header: name and value. A field may appear once per response. */
export type HeaderPair = readonly [name: string, value: string];

/** The IETF formats sluice can send: the latest (byte-identical to drafts 08-10) and the one it replaced. */
export type IetfDraft = 'draft-11' | 'draft-07';

/** Which header sets a response carries; each is switchable. */
export interface HeaderSelection {
  /** `Retry-After` on refusals (default true). */
  retryAfter?: boolean;
  /** The IETF `RateLimit-Policy` + `RateLimit` fields in this draft's format, or false for none (default 'draft-11'). */
  ietf?: IetfDraft | false;
  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset` (default true). */
  legacy?: boolean;
  /** `X-RateLimit-Reset` as epoch seconds (default, as GitHub sends it) or seconds from now. */
  legacyReset?: 'epoch-seconds' | 'delta-seconds';
}

/** What {@link rateLimitHeaders} sends when a selection leaves a set unspecified. */
export const DEFAULT_HEADER_SELECTION: Readonly<Required<HeaderSelection>> = Object.freeze({
  retryAfter: true,
  ietf: 'draft-11',
  legacy: true,
  legacyReset: 'epoch-seconds',
});

/**
 * One policy as the headers state it: its quota facts in the whole seconds the fields carry. A
 * decision's come from {@link quotaView}; a queue refusal's from its lane (queue-headers.ts).
 */
export interface PolicyFacts {
  /** The policy identifier clients see (the rule or queue name). */
  name: string;
  /** Sent as `pk` bytes in the IETF fields: never a raw API key. */
  partitionKey?: string;
  quota: number;
  unit: QuotaView['unit'];
  windowSeconds?: number;
  remaining: number;
  nextSeconds?: number;
  /** Seconds until the key is back to full capacity (draft-07 `reset`, `X-RateLimit-Reset` as delta-seconds). */
  resetSeconds: number;
  /** That instant as epoch seconds, rounded up (`X-RateLimit-Reset` by default). */
  resetEpochSeconds: number;
}

/** What the rate-limit headers of one response say: the one input of {@link serialiseHeaders}. */
export interface HeaderFacts {
  /** `Retry-After` in whole seconds; undefined when nothing refused. */
  retryAfterSeconds?: number;
  /** Every policy that decided, most restrictive first. */
  policies: readonly PolicyFacts[];
}

/**
 * The one serialiser of rate-limit headers, for decisions and queue refusals alike: every selected
 * set, in a fixed order (Retry-After, the IETF fields, the legacy fields).
 */
export function serialiseHeaders(facts: HeaderFacts, selection: HeaderSelection = {}): HeaderPair[] {
  const s = { ...DEFAULT_HEADER_SELECTION, ...selection };
  const pairs: HeaderPair[] = [];
  if (s.retryAfter) pairs.push(...retryAfter(facts.retryAfterSeconds));
  if (s.ietf === 'draft-11') pairs.push(...draft11(facts.policies));
  if (s.ietf === 'draft-07') pairs.push(...draft07(facts.policies));
  if (s.legacy) pairs.push(...legacy(facts.policies, s.legacyReset));
  return pairs;
}

/**
 * The header facts of the decisions of one request at `nowMs` (the decisions' clock, epoch ms).
 * Decisions Redis did not make (fail-open, fail-closed) carry no quota facts and are left out of the
 * policies; a fail-closed one still refuses, so it counts for Retry-After.
 */
export function decisionFacts(inputs: readonly HeaderInput[], nowMs: number): HeaderFacts {
  const seconds = refusalSeconds(inputs.map((i) => i.decision));
  return { ...(seconds !== undefined ? { retryAfterSeconds: seconds } : {}), policies: policiesOf(inputs, nowMs) };
}

/**
 * `Retry-After` in whole seconds, rounded up and at least 1 (RFC 9110 §10.2.3), so a client that
 * obeys it is never early. When several decisions refused, the request needs all of them to
 * allow, so the longest wait is sent. Fail-closed decisions count (they refuse); nothing is sent
 * when no decision refused.
 */
export function retryAfterHeaders(inputs: readonly HeaderInput[]): HeaderPair[] {
  return retryAfter(refusalSeconds(inputs.map((i) => i.decision)));
}

function retryAfter(seconds: number | undefined): HeaderPair[] {
  return seconds === undefined ? [] : [['Retry-After', String(seconds)]];
}

/**
 * draft-ietf-httpapi-ratelimit-headers-11 (also the exact format of drafts 08-10): every policy
 * that decided, most restrictive first, in both fields.
 *
 * `RateLimit-Policy: "<name>";q=<quota>[;qu="concurrent-requests"][;w=<window s>][;pk=:<bytes>:]`
 * `RateLimit: "<name>";r=<available>[;t=<seconds>][;pk=:<bytes>:]`
 *
 * `w` is sent only when the policy's window is a whole number of seconds; `t` only when the
 * decision knows when more quota arrives (see {@link QuotaView.nextSeconds}). Decisions Redis did
 * not make (fail-open, fail-closed) carry no quota facts and are left out.
 * @param nowMs the instant the decisions were made at (epoch ms, the decisions' clock).
 */
export function ietfDraft11Headers(inputs: readonly HeaderInput[], nowMs: number): HeaderPair[] {
  return draft11(policiesOf(inputs, nowMs));
}

function draft11(policies: readonly PolicyFacts[]): HeaderPair[] {
  if (policies.length === 0) return [];
  const policy = policies.map((p) => {
    let item = `${sfString(p.name)};q=${p.quota}`;
    if (p.unit !== 'requests') item += `;qu=${sfString(p.unit)}`;
    if (p.windowSeconds !== undefined) item += `;w=${p.windowSeconds}`;
    return item + partitionKey(p);
  });
  const limit = policies.map((p) => {
    let item = `${sfString(p.name)};r=${p.remaining}`;
    if (p.nextSeconds !== undefined) item += `;t=${p.nextSeconds}`;
    return item + partitionKey(p);
  });
  return [
    ['RateLimit-Policy', policy.join(', ')],
    ['RateLimit', limit.join(', ')],
  ];
}

/**
 * draft-ietf-httpapi-ratelimit-headers-07, the format draft-08 replaced:
 * `RateLimit-Policy: <quota>;w=<window s>, ...` and `RateLimit: limit=<quota>, remaining=<r>, reset=<s>`.
 *
 * The RateLimit dictionary describes the most restrictive decision only; its `reset` (required) is
 * the seconds until that key is back to full capacity. RateLimit-Policy lists every policy that has
 * a whole-second window (draft-07 requires `w`), skipping a second policy with the same quota,
 * which draft-07 forbids.
 */
export function ietfDraft07Headers(inputs: readonly HeaderInput[], nowMs: number): HeaderPair[] {
  return draft07(policiesOf(inputs, nowMs));
}

function draft07(policies: readonly PolicyFacts[]): HeaderPair[] {
  const top = policies[0];
  if (!top) return [];
  const seen = new Set<number>();
  const items: string[] = [];
  for (const p of policies) {
    if (p.windowSeconds === undefined || seen.has(p.quota)) continue;
    seen.add(p.quota);
    items.push(`${p.quota};w=${p.windowSeconds}`);
  }
  const pairs: HeaderPair[] = [];
  if (items.length) pairs.push(['RateLimit-Policy', items.join(', ')]);
  pairs.push(['RateLimit', `limit=${top.quota}, remaining=${top.remaining}, reset=${top.resetSeconds}`]);
  return pairs;
}

/**
 * `X-RateLimit-Limit`, `X-RateLimit-Remaining` and `X-RateLimit-Reset` for the most restrictive
 * decision. Reset is when that key is back to full capacity (`resetAtMs`): for a window its end,
 * for a token bucket the moment it is full again. Epoch seconds rounded up by default, or seconds
 * from `nowMs`.
 */
export function legacyHeaders(
  inputs: readonly HeaderInput[],
  nowMs: number,
  reset: 'epoch-seconds' | 'delta-seconds' = 'epoch-seconds',
): HeaderPair[] {
  return legacy(policiesOf(inputs, nowMs), reset);
}

function legacy(policies: readonly PolicyFacts[], reset: 'epoch-seconds' | 'delta-seconds'): HeaderPair[] {
  const top = policies[0];
  if (!top) return [];
  return [
    ['X-RateLimit-Limit', String(top.quota)],
    ['X-RateLimit-Remaining', String(top.remaining)],
    ['X-RateLimit-Reset', String(reset === 'epoch-seconds' ? top.resetEpochSeconds : top.resetSeconds)],
  ];
}

/**
 * Every selected header set for the decisions of one request, in a fixed order: Retry-After, the
 * IETF fields, the legacy fields. Pass only decisions that are enforced (not shadow-mode ones).
 */
export function rateLimitHeaders(inputs: readonly HeaderInput[], nowMs: number, selection: HeaderSelection = {}): HeaderPair[] {
  return serialiseHeaders(decisionFacts(inputs, nowMs), selection);
}

/** The policies of the decisions Redis made, most restrictive first, with their quota facts. */
function policiesOf(inputs: readonly HeaderInput[], nowMs: number): PolicyFacts[] {
  return byRestriction(inputs).flatMap((input) => {
    const view = quotaView(input, nowMs);
    if (!view) return [];
    const { quota, unit, windowSeconds, remaining, nextSeconds } = view;
    return [
      {
        name: input.name,
        ...(input.partitionKey !== undefined ? { partitionKey: input.partitionKey } : {}),
        quota,
        unit,
        ...(windowSeconds !== undefined ? { windowSeconds } : {}),
        remaining,
        ...(nextSeconds !== undefined ? { nextSeconds } : {}),
        resetSeconds: secondsUntil(view.resetAtMs, nowMs),
        resetEpochSeconds: Math.ceil(view.resetAtMs / 1000),
      },
    ];
  });
}

function secondsUntil(atMs: number, nowMs: number): number {
  return Math.max(0, Math.ceil((atMs - nowMs) / 1000));
}

/** An RFC 9651 String: printable ASCII, with `\` and `"` escaped; anything else becomes `_`. */
export function sfString(text: string): string {
  return `"${text.replace(/[^\x20-\x7e]/g, '_').replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function partitionKey(policy: PolicyFacts): string {
  return policy.partitionKey === undefined ? '' : `;pk=:${Buffer.from(policy.partitionKey, 'utf8').toString('base64')}:`;
}
