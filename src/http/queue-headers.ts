// Rate-limit headers of a refused queue submit: what is true of a full (or too slow) lane — its size,
// nothing left, and when a submit of the same cost would be admitted.
import { DEFAULT_HEADER_SELECTION, type HeaderPair, type HeaderSelection } from './headers.js';

export function queueRefusalHeaders(
  queue: string,
  capacity: number,
  retryAfterMs: number,
  nowMs: number,
  selection: HeaderSelection = {},
): HeaderPair[] {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const pairs: HeaderPair[] = [];
  if (selection.retryAfter !== false) pairs.push(['Retry-After', String(seconds)]);
  const ietf = selection.ietf ?? 'draft-11';
  if (ietf === 'draft-11') {
    pairs.push(['RateLimit-Policy', `"${queue}";q=${capacity}`], ['RateLimit', `"${queue}";r=0;t=${seconds}`]);
  } else if (ietf === 'draft-07') {
    pairs.push(['RateLimit-Policy', `${capacity}`], ['RateLimit', `limit=${capacity}, remaining=0, reset=${seconds}`]);
  }
  if (selection.legacy !== false) {
    // The same default as every other response (epoch seconds): a client reads one format from one server.
    const format = selection.legacyReset ?? DEFAULT_HEADER_SELECTION.legacyReset;
    const reset = format === 'epoch-seconds' ? Math.ceil((nowMs + retryAfterMs) / 1000) : seconds;
    pairs.push(['X-RateLimit-Limit', String(capacity)], ['X-RateLimit-Remaining', '0'], ['X-RateLimit-Reset', String(reset)]);
  }
  return pairs;
}
