// The IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers), every form a server may send:
//   drafts 8-10  RateLimit-Policy: "burst";q=100;w=60   RateLimit: "burst";r=50;t=30  (several policies: a list)
//   draft 7      RateLimit-Policy: 100;w=60             RateLimit: limit=100, remaining=50, reset=30
//   drafts 0-6   RateLimit-Limit: 100   RateLimit-Remaining: 50   RateLimit-Reset: 30
// `t` / `reset` are delta seconds. With several policies the most restrictive one counts: the one
// whose remaining budget must last longest per unit (largest reset / remaining).
import { count, deltaSeconds, type HeaderSource, type IgnoredHeader, type UpstreamSignal } from './signal.js';
import { parseDictionary, parseList } from './structured.js';

export interface Budget {
  limit?: number;
  remaining: number;
  resetMs?: number;
}

/** Reads one number field; a bad one is recorded in `ignored` and read as absent. */
export function field(header: string, text: string | undefined, read: (t: string) => ReturnType<typeof count>, ignored: IgnoredHeader[]): number | undefined {
  if (text === undefined) return undefined;
  const r = read(text);
  if (r.ok) return r.value;
  ignored.push({ header, reason: r.reason });
  return undefined;
}

/** The tighter of two budgets: the one that must stretch its remaining units over more time each. */
export function tighter(a: Budget | undefined, b: Budget): Budget {
  if (!a) return b;
  const per = (x: Budget) => (x.resetMs ?? 0) / Math.max(1, x.remaining);
  if (b.remaining === 0 && a.remaining > 0) return b;
  if (a.remaining === 0 && b.remaining > 0) return a;
  return per(b) > per(a) ? b : a;
}

/** A budget whose remaining exceeds its limit is a contradiction: dropped. */
export function consistent(header: string, b: Budget, ignored: IgnoredHeader[]): Budget | undefined {
  if (b.limit !== undefined && b.remaining > b.limit) {
    ignored.push({ header, reason: 'inconsistent' });
    return undefined;
  }
  return b;
}

export function parseIetf(h: HeaderSource, ignored: IgnoredHeader[]): { signal: UpstreamSignal; style: 'ietf' | 'ietf-draft7' | 'ietf-separate' } | undefined {
  const combined = h.get('ratelimit');
  if (combined !== null) {
    const dict = /\b(remaining|reset|limit)\s*=/.test(combined) && !/;\s*r\s*=/.test(combined) ? parseDictionary(combined) : undefined;
    if (dict) return draft7(dict, h.get('ratelimit-policy'), ignored);
    const items = parseList(combined);
    if (!items) {
      ignored.push({ header: 'RateLimit', reason: 'malformed' });
      return undefined;
    }
    const policies = new Map<string, number>();
    const policyText = h.get('ratelimit-policy');
    if (policyText !== null) {
      const list = parseList(policyText);
      if (!list) ignored.push({ header: 'RateLimit-Policy', reason: 'malformed' });
      for (const p of list ?? []) {
        const q = field('RateLimit-Policy', p.params.q, count, ignored);
        if (q !== undefined) policies.set(p.value, q);
      }
    }
    let best: Budget | undefined;
    for (const item of items) {
      if (item.params.r === undefined) {
        ignored.push({ header: 'RateLimit', reason: 'malformed' });
        continue;
      }
      const remaining = field('RateLimit', item.params.r, count, ignored);
      const resetMs = field('RateLimit', item.params.t, deltaSeconds, ignored);
      if (remaining === undefined) continue;
      const limit = policies.get(item.value);
      const b = consistent('RateLimit', { remaining, ...(resetMs !== undefined ? { resetMs } : {}), ...(limit !== undefined ? { limit } : {}) }, ignored);
      if (b) best = tighter(best, b);
    }
    return best ? { signal: best, style: 'ietf' } : undefined;
  }
  const remainingText = h.get('ratelimit-remaining');
  if (remainingText === null) return undefined;
  const remaining = field('RateLimit-Remaining', remainingText, count, ignored);
  if (remaining === undefined) return undefined;
  const limit = field('RateLimit-Limit', firstNumber(h.get('ratelimit-limit')), count, ignored);
  const resetMs = field('RateLimit-Reset', h.get('ratelimit-reset') ?? undefined, deltaSeconds, ignored);
  const b = consistent('RateLimit-Remaining', { remaining, ...(limit !== undefined ? { limit } : {}), ...(resetMs !== undefined ? { resetMs } : {}) }, ignored);
  return b ? { signal: b, style: 'ietf-separate' } : undefined;
}

function draft7(dict: Record<string, string>, policy: string | null, ignored: IgnoredHeader[]): { signal: UpstreamSignal; style: 'ietf-draft7' } | undefined {
  const remaining = field('RateLimit', dict.remaining, count, ignored);
  if (remaining === undefined) {
    if (dict.remaining === undefined) ignored.push({ header: 'RateLimit', reason: 'malformed' });
    return undefined;
  }
  // The policy's first number is the limit when the dictionary has none (`RateLimit-Policy: 100;w=60`).
  const limit = field('RateLimit', dict.limit ?? firstNumber(policy), count, ignored);
  const resetMs = field('RateLimit', dict.reset, deltaSeconds, ignored);
  const b = consistent('RateLimit', { remaining, ...(limit !== undefined ? { limit } : {}), ...(resetMs !== undefined ? { resetMs } : {}) }, ignored);
  return b ? { signal: b, style: 'ietf-draft7' } : undefined;
}

/** `100;w=60, 1000;w=3600` -> `100` (the older forms list the current limit first). */
function firstNumber(text: string | null): string | undefined {
  if (text === null) return undefined;
  return text.split(/[;,]/)[0]!.trim();
}
