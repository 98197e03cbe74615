// What an upstream said about its rate limit, in one shape whatever header style it used: the budget
// left until a reset, a wait it asked for, the cost it charged. Every parser of this room returns it.

/** The largest Retry-After honoured (ms): a longer one is capped to this, so a typo of days holds a queue at most a day. */
export const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;
/** The largest reset accepted (ms): a monthly quota's reset fits; anything longer is taken for garbage. */
export const MAX_RESET_MS = 31 * 24 * 3600 * 1000;
/** The largest limit or remaining count accepted: beyond it a value is taken for garbage. */
export const MAX_COUNT = 1e12;

/** An upstream's rate-limit state after one response (every field optional: headers say what they say). */
export interface UpstreamSignal {
  /** The budget of the current window (requests or cost points). */
  limit?: number;
  /** What is left of it. */
  remaining?: number;
  /** Milliseconds until the budget is whole again (window reset, or a leaky bucket drained). */
  resetMs?: number;
  /** Milliseconds the upstream asked to wait before the next call (Retry-After), at most {@link MAX_RETRY_AFTER_MS}. */
  retryAfterMs?: number;
  /** What this call cost, when the upstream said. */
  cost?: number;
}

/** A header value not used, and why (a metric counts these by reason). */
export interface IgnoredHeader {
  header: string;
  reason: IgnoreReason;
}

export type IgnoreReason = 'malformed' | 'negative' | 'absurd' | 'inconsistent' | 'in_the_past' | 'capped';

/** The outcome of reading one response's headers. */
export interface ParsedSignal {
  signal: UpstreamSignal;
  ignored: IgnoredHeader[];
  /** Which header style gave the budget (undefined: none did). */
  style?: UpstreamStyle;
}

export type UpstreamStyle = 'ietf' | 'ietf-draft7' | 'ietf-separate' | 'x-ratelimit' | 'openai' | 'shopify';

/** Anything headers can be read from by name, case-insensitively (fetch's Headers, a plain record wrapped). */
export interface HeaderSource {
  get(name: string): string | null;
}

/** A number field's value, or why it is not one. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: IgnoreReason };

export const ok = <T>(value: T): Parsed<T> => ({ ok: true, value });
export const bad = (reason: IgnoreReason): Parsed<never> => ({ ok: false, reason });

/** A non-negative decimal count (integer or fraction, as written), within {@link MAX_COUNT}. */
export function count(text: string, max = MAX_COUNT): Parsed<number> {
  const t = text.trim();
  if (/^-\d+(\.\d+)?$/.test(t)) return bad('negative');
  if (!/^\d{1,20}(\.\d{1,9})?$/.test(t)) return bad('malformed');
  const n = Number(t);
  return n > max ? bad('absurd') : ok(n);
}

/** A count given as a JSON number (a response body's cost or usage): finite, from 0 to `max`. */
export function jsonCount(v: unknown, max = MAX_COUNT): Parsed<number> {
  if (typeof v !== 'number' || !Number.isFinite(v)) return bad('malformed');
  if (v < 0) return bad('negative');
  return v > max ? bad('absurd') : ok(v);
}

/** Delta seconds (integer or fraction) as ms, within {@link MAX_RESET_MS}. */
export function deltaSeconds(text: string): Parsed<number> {
  const n = count(text);
  if (!n.ok) return n;
  const ms = Math.round(n.value * 1000);
  return ms > MAX_RESET_MS ? bad('absurd') : ok(ms);
}
