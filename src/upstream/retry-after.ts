// Retry-After (RFC 9110 §10.2.3): delay-seconds or an HTTP-date, capped at MAX_RETRY_AFTER_MS.
import { MAX_RETRY_AFTER_MS, bad, ok, type Parsed } from './signal.js';

/**
 * Milliseconds to wait from `nowMs`. A date in the past is 0 (wait no more). A longer wait than the
 * cap is the cap, flagged `capped` through `onCapped` (the value is used, and counted).
 */
export function parseRetryAfter(value: string, nowMs: number, onCapped?: () => void): Parsed<number> {
  const text = value.trim();
  let ms: number;
  // Delay-seconds are an integer in RFC 9110; fractions (Shopify sends `2.0`) are read too.
  if (/^\d+(\.\d{1,9})?$/.test(text)) {
    ms = text.length > 22 ? Infinity : Math.ceil(Number(text) * 1000);
  } else if (/^-\d+(\.\d+)?$/.test(text)) {
    return bad('negative');
  } else {
    // Only the HTTP-date forms: an IMF-fixdate (or the obsolete RFC 850 / asctime forms Date.parse reads)
    // has a weekday name; Date.parse alone would take "1" or "2024" for dates.
    if (!/^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? /.test(text)) return bad('malformed');
    const at = Date.parse(text);
    if (Number.isNaN(at)) return bad('malformed');
    ms = Math.max(0, at - nowMs);
  }
  if (ms > MAX_RETRY_AFTER_MS) {
    onCapped?.();
    return ok(MAX_RETRY_AFTER_MS);
  }
  return ok(ms);
}
