// The controller in a closed loop, on the model alone (no Redis, no timers): a queue configured 2x
// faster than a hidden upstream limit, paced the way the dispatcher paces (starts spaced by
// max(configured, ui) while ue is ahead, 1% margin, no start inside a pause), each answer fed back
// through the parsers' signal and the model. What the timing test asks of the real system, asked of
// the algorithm: no 429 after the learning period, most of the capacity used.
import { describe, expect, it } from 'vitest';
import { AIMD_HOLD_MS, AIMD_INCREASE_STEPS, SHOPIFY_DRAIN_MS, effectiveInterval, learn, type LearnEvent, type LearnState } from '../../../src/upstream/index.js';

/** What the upstream answered to a call at `t` (µs): refused or not, and the signal it gave. */
type Upstream = (t: number) => { refused: boolean; remaining?: number; resetUs?: number; retryAfterUs?: number };

interface Run {
  /** Start instants (µs) of the calls and whether each was refused. */
  calls: { t: number; refused: boolean }[];
}

const LATENCY_US = 3_000;
const MARGIN = 1.01;

function drive(configuredUs: number, upstream: Upstream, untilUs: number): Run {
  let state: LearnState = { exists: true, ui: 0, ue: 0, um: 0 };
  const args = { configuredUs, floorUs: 0, holdUs: AIMD_HOLD_MS * 1000, lane: false, increaseSteps: AIMD_INCREASE_STEPS };
  const calls: Run['calls'] = [];
  let t = 0;
  let pausedUntil = 0;
  while (t < untilUs) {
    const a = upstream(t);
    calls.push({ t, refused: a.refused });
    const now = t + LATENCY_US;
    const event: LearnEvent =
      a.remaining !== undefined && a.resetUs !== undefined ? { kind: 'budget', remaining: a.remaining, resetUs: a.resetUs } : a.refused ? { kind: 'throttled', startedUs: t } : { kind: 'ok' };
    state = learn(state, event, { ...args, nowUs: now }).state;
    if (event.kind === 'budget' && event.remaining === 0) pausedUntil = Math.max(pausedUntil, now + event.resetUs);
    if (a.retryAfterUs !== undefined) pausedUntil = Math.max(pausedUntil, now + a.retryAfterUs);
    // The dispatcher hands out the next start after this answer came back (starts are far apart).
    t = Math.max(t + Math.ceil(effectiveInterval(state, configuredUs, now) * MARGIN), pausedUntil);
  }
  return { calls };
}

const between = (run: Run, from: number, to: number) => run.calls.filter((c) => c.t >= from && c.t < to);
const S = 1_000_000;

describe('closed loop, configured 2x too fast', () => {
  it('429 + Retry-After only (5 in any 1 s, Retry-After 1 s): a few 429s while learning, none after, >= 90% of the capacity', () => {
    // Each 429 lowers the ceiling to 95% of the rate that drew it; a windowed limit answers 429 only
    // once its window is full, so the rate has risen past the limit by then and it takes a few.
    const accepted: number[] = [];
    const upstream: Upstream = (t) => {
      while (accepted.length && accepted[0]! <= t - S) accepted.shift();
      if (accepted.length < 5) return accepted.push(t), { refused: false };
      return { refused: true, retryAfterUs: S };
    };
    const run = drive(100_000, upstream, 55 * S);
    const learning = between(run, 0, 20 * S).filter((c) => c.refused).length;
    const steady = between(run, 20 * S, 55 * S);
    expect(learning).toBeGreaterThan(0);
    expect(learning).toBeLessThanOrEqual(6);
    expect(steady.filter((c) => c.refused)).toEqual([]);
    expect(steady.length / (5 * 35)).toBeGreaterThanOrEqual(0.9);
  });

  it('GitHub-like fixed window (10 per 2 s, X-RateLimit-*): no 429 at all, >= 88% of the capacity', () => {
    // reset / remaining puts the window's last unit at its reset, into the next window: 9 of 10 are
    // used (a budget of 5,000 an hour loses 1 in 5,000).
    const used = new Map<number, number>();
    const upstream: Upstream = (t) => {
      const w = Math.floor(t / (2 * S));
      const n = used.get(w) ?? 0;
      const refused = n >= 10;
      if (!refused) used.set(w, n + 1);
      return { refused, remaining: 10 - (used.get(w) ?? 0), resetUs: (w + 1) * 2 * S - t };
    };
    const run = drive(100_000, upstream, 60 * S);
    expect(run.calls.filter((c) => c.refused)).toEqual([]);
    expect(between(run, 4 * S, 60 * S).length / (5 * 56)).toBeGreaterThanOrEqual(0.88);
  });

  it('Shopify-like leaky bucket (40, leaking 2/s): never refused, never full after learning, >= 95% of the leak rate', () => {
    let level = 0;
    let last = 0;
    const levels: { t: number; level: number }[] = [];
    const upstream: Upstream = (t) => {
      level = Math.max(0, level - ((t - last) / S) * 2);
      last = t;
      const refused = level + 1 > 40;
      if (!refused) level += 1;
      const shown = Math.min(40, Math.ceil(level));
      levels.push({ t, level: shown });
      // What the parser makes of `X-Shopify-Shop-Api-Call-Limit: <shown>/40`.
      return { refused, remaining: 40 - shown, resetUs: Math.ceil((shown * SHOPIFY_DRAIN_MS) / 40) * 1000 };
    };
    const run = drive(250_000, upstream, 60 * S);
    expect(run.calls.filter((c) => c.refused)).toEqual([]);
    expect(Math.max(...levels.filter((l) => l.t >= 12 * S).map((l) => l.level))).toBeLessThan(40);
    expect(between(run, 20 * S, 60 * S).length / (2 * 40)).toBeGreaterThanOrEqual(0.95);
  });
});
