// Rate-limit header facts of a refused queue submit, true to a leaky bucket used as a queue: its quota
// is the lane's capacity, its window the time a full lane takes to drain at the rate, nothing remains
// (the submit was refused), and the reset is when a submit of the same cost would be admitted. They
// go through the one serialiser of headers.ts, as a decision's do.
import { retryAfterSeconds } from './retry-after.js';
import type { HeaderFacts } from './headers.js';

export interface QueueRefusal {
  queue: string;
  capacity: number;
  ratePerSecond: number;
  retryAfterMs: number;
}

/** The header facts of a refused submit at `nowMs` (epoch ms). */
export function queueRefusalFacts(r: QueueRefusal, nowMs: number): HeaderFacts {
  const seconds = retryAfterSeconds(r.retryAfterMs);
  // The drain time of a full lane, only when it is a whole number of seconds (the drafts have no fractions).
  const drain = r.capacity / r.ratePerSecond;
  const windowSeconds = Number.isInteger(drain) && drain >= 1 ? drain : undefined;
  return {
    retryAfterSeconds: seconds,
    policies: [
      {
        name: r.queue,
        quota: r.capacity,
        unit: 'requests',
        ...(windowSeconds !== undefined ? { windowSeconds } : {}),
        // Nothing can be admitted before the reset, whichever the reason (a full lane, or a wait too long).
        remaining: 0,
        nextSeconds: seconds,
        resetSeconds: seconds,
        // The same default as every other response (epoch seconds): a client reads one format from one server.
        resetEpochSeconds: Math.ceil((nowMs + r.retryAfterMs) / 1000),
      },
    ],
  };
}
