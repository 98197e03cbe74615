// Rate-limit response headers as pure functions of decisions: Retry-After, the IETF RateLimit
// fields (draft-11, the latest, and draft-07, the last different format) and the legacy X-RateLimit-*.
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
import { retryAfterSeconds } from './retry-after.js';

/** The inputs and quota facts the header functions work from (see quota.ts). */
export type { HeaderInput, QuotaView } from './quota.js';
export { quotaView, byRestriction } from './quota.js';
export { retryAfterSeconds } from './retry-after.js';

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
 * `Retry-After` in whole seconds, rounded up and at least 1 (RFC 9110 §10.2.3), so a client that
 * obeys it is never early. When several decisions refused, the request needs all of them to
 * allow, so the longest wait is sent. Fail-closed decisions count (they refuse); nothing is sent
 * when no decision refused.
 */
export function retryAfterHeaders(inputs: readonly HeaderInput[]): HeaderPair[] {
  const refused = inputs.filter((i) => !i.decision.allowed);
  if (refused.length === 0) return [];
  const ms = Math.max(...refused.map((i) => i.decision.retryAfterMs));
  return [['Retry-After', String(retryAfterSeconds(ms))]];
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
  return draft11(describe(inputs, nowMs));
}

function draft11(described: readonly Described[]): HeaderPair[] {
  if (described.length === 0) return [];
  const policy = described.map(({ input, view }) => {
    let item = `${sfString(input.name)};q=${view.quota}`;
    if (view.unit !== 'requests') item += `;qu=${sfString(view.unit)}`;
    if (view.windowSeconds !== undefined) item += `;w=${view.windowSeconds}`;
    return item + partitionKey(input);
  });
  const limit = described.map(({ input, view }) => {
    let item = `${sfString(input.name)};r=${view.remaining}`;
    if (view.nextSeconds !== undefined) item += `;t=${view.nextSeconds}`;
    return item + partitionKey(input);
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
  return draft07(describe(inputs, nowMs), nowMs);
}

function draft07(described: readonly Described[], nowMs: number): HeaderPair[] {
  const top = described[0];
  if (!top) return [];
  const seen = new Set<number>();
  const policies: string[] = [];
  for (const { view } of described) {
    if (view.windowSeconds === undefined || seen.has(view.quota)) continue;
    seen.add(view.quota);
    policies.push(`${view.quota};w=${view.windowSeconds}`);
  }
  const reset = secondsUntil(top.view.resetAtMs, nowMs);
  const pairs: HeaderPair[] = [];
  if (policies.length) pairs.push(['RateLimit-Policy', policies.join(', ')]);
  pairs.push(['RateLimit', `limit=${top.view.quota}, remaining=${top.view.remaining}, reset=${reset}`]);
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
  return legacy(describe(inputs, nowMs), nowMs, reset);
}

function legacy(described: readonly Described[], nowMs: number, reset: 'epoch-seconds' | 'delta-seconds'): HeaderPair[] {
  const top = described[0];
  if (!top) return [];
  const resetValue = reset === 'epoch-seconds' ? Math.ceil(top.view.resetAtMs / 1000) : secondsUntil(top.view.resetAtMs, nowMs);
  return [
    ['X-RateLimit-Limit', String(top.view.quota)],
    ['X-RateLimit-Remaining', String(top.view.remaining)],
    ['X-RateLimit-Reset', String(resetValue)],
  ];
}

/**
 * Every selected header set for the decisions of one request, in a fixed order: Retry-After, the
 * IETF fields, the legacy fields. Pass only decisions that are enforced (not shadow-mode ones).
 */
export function rateLimitHeaders(inputs: readonly HeaderInput[], nowMs: number, selection: HeaderSelection = {}): HeaderPair[] {
  const s = { ...DEFAULT_HEADER_SELECTION, ...selection };
  const pairs: HeaderPair[] = [];
  if (s.retryAfter) pairs.push(...retryAfterHeaders(inputs));
  // The quota facts are worked out once for every set that needs them.
  const described = s.ietf || s.legacy ? describe(inputs, nowMs) : [];
  if (s.ietf === 'draft-11') pairs.push(...draft11(described));
  if (s.ietf === 'draft-07') pairs.push(...draft07(described, nowMs));
  if (s.legacy) pairs.push(...legacy(described, nowMs, s.legacyReset));
  return pairs;
}

/** A decision with its quota facts. */
interface Described {
  input: HeaderInput;
  view: QuotaView;
}

function describe(inputs: readonly HeaderInput[], nowMs: number): Described[] {
  return byRestriction(inputs).flatMap((input) => {
    const view = quotaView(input, nowMs);
    return view ? [{ input, view }] : [];
  });
}

function secondsUntil(atMs: number, nowMs: number): number {
  return Math.max(0, Math.ceil((atMs - nowMs) / 1000));
}

/** An RFC 9651 String: printable ASCII, with `\` and `"` escaped; anything else becomes `_`. */
function sfString(text: string): string {
  return `"${text.replace(/[^\x20-\x7e]/g, '_').replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function partitionKey(input: HeaderInput): string {
  return input.partitionKey === undefined ? '' : `;pk=:${Buffer.from(input.partitionKey, 'utf8').toString('base64')}:`;
}
