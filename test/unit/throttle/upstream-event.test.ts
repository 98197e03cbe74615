// How a handler's report is read: a budget needs both remaining and reset (and a remaining within its
// limit); a refusal or a Retry-After without one is a 429 for AIMD; anything else a plain success.
// Non-finite, negative or out-of-range numbers count as absent.
import { describe, expect, it } from 'vitest';
import { eventOf } from '../../../src/throttle/upstream-learn.js';

describe('eventOf', () => {
  it('reads budgets, refusals and successes', () => {
    expect(eventOf({ limit: 10, remaining: 4.7, resetMs: 1000.4 }, 5)).toEqual({ kind: 'budget', remaining: 4, resetUs: 1_000_400 });
    expect(eventOf({ remaining: 0, resetMs: 0, throttled: true }, 5)).toEqual({ kind: 'budget', remaining: 0, resetUs: 0 });
    expect(eventOf({ throttled: true }, 5)).toEqual({ kind: 'throttled', startedUs: 5 });
    expect(eventOf({ retryAfterMs: 2000 }, 5)).toEqual({ kind: 'throttled', startedUs: 5 });
    expect(eventOf({ remaining: 4 }, 5)).toEqual({ kind: 'ok' });
    expect(eventOf({}, 5)).toEqual({ kind: 'ok' });
  });

  it('bad numbers are absent: never a budget from them', () => {
    expect(eventOf({ remaining: Number.NaN, resetMs: 1000 }, 5)).toEqual({ kind: 'ok' });
    expect(eventOf({ remaining: -1, resetMs: 1000 }, 5)).toEqual({ kind: 'ok' });
    expect(eventOf({ remaining: 5, resetMs: Infinity }, 5)).toEqual({ kind: 'ok' });
    expect(eventOf({ remaining: 5, resetMs: 40 * 86_400_000 }, 5)).toEqual({ kind: 'ok' });
    expect(eventOf({ limit: 3, remaining: 5, resetMs: 1000, throttled: true }, 5)).toEqual({ kind: 'throttled', startedUs: 5 });
  });
});
