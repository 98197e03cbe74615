// Retry-After values (RFC 9110 §10.2.3): delay-seconds or an HTTP-date.

/** Milliseconds to wait from `nowMs`, or undefined when the value is neither form. */
export function retryAfterMs(value: string | null | undefined, nowMs = Date.now()): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
