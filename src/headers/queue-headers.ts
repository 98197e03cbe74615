// Rate-limit headers of a refused queue submit, true to a leaky bucket used as a queue: its quota is
// the lane's capacity, its window the time a full lane takes to drain at the rate, nothing remains
// (the submit was refused), and the reset is when a submit of the same cost would be admitted.
import { retryAfterSeconds } from './retry-after.js';
import { DEFAULT_HEADER_SELECTION, type HeaderPair, type HeaderSelection } from './headers.js';

export interface QueueRefusal {
  queue: string;
  capacity: number;
  ratePerSecond: number;
  retryAfterMs: number;
}

export function queueRefusalHeaders(r: QueueRefusal, nowMs: number, selection: HeaderSelection = {}): HeaderPair[] {
  const seconds = retryAfterSeconds(r.retryAfterMs);
  // Nothing can be admitted before the reset, whichever the reason (a full lane, or a wait too long).
  const remaining = 0;
  // The drain time of a full lane, only when it is a whole number of seconds (the drafts have no fractions).
  const drain = r.capacity / r.ratePerSecond;
  const window = Number.isInteger(drain) && drain >= 1 ? drain : undefined;
  const pairs: HeaderPair[] = [];
  if (selection.retryAfter !== false) pairs.push(['Retry-After', String(seconds)]);
  const ietf = selection.ietf ?? DEFAULT_HEADER_SELECTION.ietf;
  if (ietf === 'draft-11') {
    pairs.push(['RateLimit-Policy', `"${r.queue}";q=${r.capacity}${window ? `;w=${window}` : ''}`], ['RateLimit', `"${r.queue}";r=${remaining};t=${seconds}`]);
  } else if (ietf === 'draft-07') {
    // draft-07 requires the window; without a whole-second one only the RateLimit field is sent.
    if (window) pairs.push(['RateLimit-Policy', `${r.capacity};w=${window}`]);
    pairs.push(['RateLimit', `limit=${r.capacity}, remaining=${remaining}, reset=${seconds}`]);
  }
  if (selection.legacy !== false) {
    // The same default as every other response (epoch seconds): a client reads one format from one server.
    const format = selection.legacyReset ?? DEFAULT_HEADER_SELECTION.legacyReset;
    const reset = format === 'epoch-seconds' ? Math.ceil((nowMs + r.retryAfterMs) / 1000) : seconds;
    pairs.push(['X-RateLimit-Limit', String(r.capacity)], ['X-RateLimit-Remaining', String(remaining)], ['X-RateLimit-Reset', String(reset)]);
  }
  return pairs;
}
