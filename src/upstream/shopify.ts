// Shopify's REST call limit, `X-Shopify-Shop-Api-Call-Limit: 32/40`: the level of a leaky bucket of 40
// (400 on Plus) that drains in 20 s (2/s, 20/s on Plus). The header gives no reset; the time the
// bucket takes to drain from its level is that reset: level x 20 s / size. Paced by the budget rule
// (reset / remaining), a queue settles with the bucket half full, starting at the bucket's leak rate.
import { bad, ok, type HeaderSource, type IgnoredHeader, type Parsed, type UpstreamSignal } from './signal.js';

/** Shopify's bucket drains completely in this long, whatever its size. */
export const SHOPIFY_DRAIN_MS = 20_000;

export function callLimit(text: string): Parsed<{ used: number; size: number }> {
  const m = /^\s*(-?\d{1,9})\s*\/\s*(-?\d{1,9})\s*$/.exec(text);
  if (!m) return bad('malformed');
  const used = Number(m[1]);
  const size = Number(m[2]);
  if (used < 0 || size < 0) return bad('negative');
  if (size === 0 || used > size) return bad('inconsistent');
  return ok({ used, size });
}

export function parseShopify(h: HeaderSource, ignored: IgnoredHeader[]): UpstreamSignal | undefined {
  const text = h.get('x-shopify-shop-api-call-limit');
  if (text === null) return undefined;
  const r = callLimit(text);
  if (!r.ok) {
    ignored.push({ header: 'X-Shopify-Shop-Api-Call-Limit', reason: r.reason });
    return undefined;
  }
  const { used, size } = r.value;
  return { limit: size, remaining: size - used, resetMs: Math.ceil((used * SHOPIFY_DRAIN_MS) / size) };
}
