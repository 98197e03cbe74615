// One response's rate-limit headers, whichever style the upstream speaks, as one UpstreamSignal. The
// styles are tried in order (IETF, X-RateLimit-*, OpenAI, Shopify); the first that gives a budget wins.
// Retry-After is read alongside. Never throws: a bad value is listed in `ignored` and read as absent.
import { parseIetf } from './ietf.js';
import { parseOpenAi } from './openai.js';
import { parseRetryAfter } from './retry-after.js';
import { parseShopify } from './shopify.js';
import type { HeaderSource, IgnoredHeader, ParsedSignal, UpstreamSignal, UpstreamStyle } from './signal.js';
import { parseXRateLimit } from './x-ratelimit.js';

/** Headers as a plain record (names in any case) for {@link parseUpstreamHeaders}. */
export function headerSource(record: Readonly<Record<string, string | readonly string[] | undefined>>): HeaderSource {
  const lower = new Map<string, string>();
  for (const [name, value] of Object.entries(record)) {
    if (value !== undefined) lower.set(name.toLowerCase(), typeof value === 'string' ? value : value.join(', '));
  }
  return { get: (name) => lower.get(name.toLowerCase()) ?? null };
}

export function parseUpstreamHeaders(h: HeaderSource, nowMs: number = Date.now()): ParsedSignal {
  const ignored: IgnoredHeader[] = [];
  let signal: UpstreamSignal = {};
  let style: UpstreamStyle | undefined;
  const ietf = parseIetf(h, ignored);
  if (ietf) ({ signal, style } = ietf);
  const tries: [UpstreamStyle, () => UpstreamSignal | undefined][] = [
    ['x-ratelimit', () => parseXRateLimit(h, nowMs, ignored)],
    ['openai', () => parseOpenAi(h, ignored)],
    ['shopify', () => parseShopify(h, ignored)],
  ];
  for (const [name, read] of tries) {
    if (style) break;
    const s = read();
    if (s) {
      signal = s;
      style = name;
    }
  }
  const retry = h.get('retry-after');
  if (retry !== null) {
    const r = parseRetryAfter(retry, nowMs, () => ignored.push({ header: 'Retry-After', reason: 'capped' }));
    if (r.ok) signal = { ...signal, retryAfterMs: r.value };
    else ignored.push({ header: 'Retry-After', reason: r.reason });
  }
  return style ? { signal, ignored, style } : { signal, ignored };
}
