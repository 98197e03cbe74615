// OpenAI-style budgets: x-ratelimit-{limit,remaining,reset}-requests and -tokens, the resets written as
// Go durations (`6m0s`, `1s`, `20ms`, `1h2m3.5s`). The requests budget paces the calls; the tokens
// budget counts only once it is used up (remaining 0: nothing may be sent before its reset), since how
// many tokens the next call takes is not known.
import { consistent, field, tighter, type Budget } from './ietf.js';
import { MAX_RESET_MS, bad, count, jsonCount, ok, type HeaderSource, type IgnoredHeader, type Parsed, type UpstreamSignal } from './signal.js';

const UNIT_MS: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, 'µs': 0.001, ns: 0.000001 };

/** A Go duration as ms (rounded up: waiting a fraction of a ms longer never hurts). */
export function goDuration(text: string): Parsed<number> {
  const t = text.trim();
  if (t.startsWith('-')) return bad('negative');
  if (!/^(\d{1,12}(\.\d{1,9})?(h|ms|m|s|us|µs|ns))+$/.test(t)) return bad('malformed');
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)/g)) ms += Number(m[1]) * UNIT_MS[m[2]!]!;
  return ms > MAX_RESET_MS ? bad('absurd') : ok(Math.ceil(ms));
}

function budget(h: HeaderSource, kind: 'requests' | 'tokens', ignored: IgnoredHeader[]): Budget | undefined {
  const remainingText = h.get(`x-ratelimit-remaining-${kind}`);
  if (remainingText === null) return undefined;
  const remaining = field(`x-ratelimit-remaining-${kind}`, remainingText, count, ignored);
  if (remaining === undefined) return undefined;
  const limit = field(`x-ratelimit-limit-${kind}`, h.get(`x-ratelimit-limit-${kind}`) ?? undefined, count, ignored);
  const resetMs = field(`x-ratelimit-reset-${kind}`, h.get(`x-ratelimit-reset-${kind}`) ?? undefined, goDuration, ignored);
  return consistent(`x-ratelimit-remaining-${kind}`, { remaining, ...(limit !== undefined ? { limit } : {}), ...(resetMs !== undefined ? { resetMs } : {}) }, ignored);
}

export function parseOpenAi(h: HeaderSource, ignored: IgnoredHeader[]): UpstreamSignal | undefined {
  const requests = budget(h, 'requests', ignored);
  const tokens = budget(h, 'tokens', ignored);
  if (tokens && tokens.remaining === 0) return tighter(requests, { remaining: 0, ...(tokens.resetMs !== undefined ? { resetMs: tokens.resetMs } : {}) });
  return requests;
}

/**
 * The tokens budget alone, for a queue that counts tokens (the `http` handler's `cost_from:
 * openai_usage`): its remaining tokens until its reset pace the queue's cost units.
 */
export function parseOpenAiTokens(h: HeaderSource, ignored: IgnoredHeader[]): UpstreamSignal | undefined {
  return budget(h, 'tokens', ignored);
}

/** A chat or embeddings answer's `usage.total_tokens`: what the call cost in tokens. */
export function usageTokens(body: unknown): number | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const usage = (body as { usage?: unknown }).usage;
  if (typeof usage !== 'object' || usage === null) return undefined;
  const total = jsonCount((usage as { total_tokens?: unknown }).total_tokens);
  return total.ok ? total.value : undefined;
}
