// The de-facto X-RateLimit-Limit / -Remaining / -Reset headers (GitHub, Twitter, many others). Reset is
// written either as epoch seconds (GitHub), epoch ms, or delta seconds; which one is detected by size:
// at least 1e12 is epoch ms, at least 1e9 epoch seconds (from 2001), less is a delta (under 31.7 years).
import { consistent, field } from './ietf.js';
import { MAX_RESET_MS, bad, count, ok, type HeaderSource, type IgnoredHeader, type Parsed, type UpstreamSignal } from './signal.js';

const EPOCH_SECONDS = 1e9;
const EPOCH_MS = 1e12;

/** An X-RateLimit-Reset value as ms from `nowMs`. */
export function resetFromNow(text: string, nowMs: number): Parsed<number> {
  const n = count(text, 1e15);
  if (!n.ok) return n;
  const v = n.value;
  const ms = v >= EPOCH_MS ? v - nowMs : v >= EPOCH_SECONDS ? v * 1000 - nowMs : v * 1000;
  // An epoch a little in the past is clock skew or a window that just turned: the budget is back now.
  if (ms < -60_000) return bad('in_the_past');
  if (ms > MAX_RESET_MS) return bad('absurd');
  return ok(Math.max(0, Math.round(ms)));
}

export function parseXRateLimit(h: HeaderSource, nowMs: number, ignored: IgnoredHeader[]): UpstreamSignal | undefined {
  const remainingText = h.get('x-ratelimit-remaining');
  if (remainingText === null) return undefined;
  const remaining = field('X-RateLimit-Remaining', remainingText, count, ignored);
  if (remaining === undefined) return undefined;
  const limit = field('X-RateLimit-Limit', h.get('x-ratelimit-limit') ?? undefined, count, ignored);
  const resetMs = field('X-RateLimit-Reset', h.get('x-ratelimit-reset') ?? undefined, (t) => resetFromNow(t, nowMs), ignored);
  return consistent('X-RateLimit-Remaining', { remaining, ...(limit !== undefined ? { limit } : {}), ...(resetMs !== undefined ? { resetMs } : {}) }, ignored);
}
