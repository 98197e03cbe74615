// A window algorithm's later charges in one window keep the key's expiry (SET KEEPTTL) instead of
// setting it again: the expiry the first charge set (the window's end, or the next window's for the
// sliding counter, plus the 1 s margin: lua/includes/now.lua) is never shorter than what a PX of the
// later charge would set, so no state vanishes early. Held over random non-decreasing instants, for
// each limiter alone and for the all-or-nothing script; a new window sets its expiry afresh.
import fc from 'fast-check';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '../../src/index.js';
import { limitAll } from '../../src/limiters/all-or-nothing.js';
import type { Limiter } from '../../src/limiters/limiter.js';
import { useBackend } from '../helpers/fixtures.js';

const ctx = useBackend('single');
const WINDOW = 10_000;
const T0 = 1_796_000_000_000; // a window start

/** The ms to the end of what the state must cover after a charge at `now`, plus the margin: what PX would set. */
function needMs(algorithm: 'fixed-window' | 'sliding-counter', now: number): number {
  const start = Math.floor(now / WINDOW) * WINDOW;
  return (algorithm === 'fixed-window' ? start + WINDOW : start + 2 * WINDOW) - now + 1000;
}

let run = 0;

describe.each(['fixed-window', 'sliding-counter'] as const)('%s state expiry', (algorithm) => {
  it('a later charge in the window keeps the expiry; a new window sets it again', async () => {
    const raw = ctx.backend.raw as Redis;
    const limiter = ctx.sluice.limiter({ algorithm, limit: 1_000, windowMs: WINDOW, name: `exp-${algorithm}` } as PolicyInput);
    const key = limiter.keyOf('k');
    await limiter.limit('k', { nowMs: T0 + 100 });
    const first = await raw.pttl(key);
    expect(first).toBeGreaterThan(needMs(algorithm, T0 + 100) - 200);
    await limiter.limit('k', { nowMs: T0 + 6_000 });
    // A PX would have cut it to needMs(T0 + 6000), 5.9 s less: kept instead.
    const kept = await raw.pttl(key);
    expect(kept).toBeLessThanOrEqual(first);
    expect(kept).toBeGreaterThan(first - 200);
    await limiter.limit('k', { nowMs: T0 + WINDOW + 500 });
    expect(Math.abs((await raw.pttl(key)) - needMs(algorithm, T0 + WINDOW + 500))).toBeLessThan(200);
  });

  it('after every charge the key lives at least as long as a PX of that charge would make it', async () => {
    const raw = ctx.backend.raw as Redis;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 4_000 }), { minLength: 1, maxLength: 15 }), fc.boolean(), async (steps, together) => {
        const r = run++;
        const limiter = ctx.sluice.limiter({ algorithm, limit: 1_000_000, windowMs: WINDOW, name: `expp-${algorithm}-${r}` } as PolicyInput);
        const other: Limiter = ctx.sluice.limiter({ algorithm: 'token-bucket', capacity: 1_000_000, refillPerSecond: 1, name: `expo-${r}` });
        let now = T0 + 1;
        for (const dt of steps) {
          now += dt;
          // Alone (its own script) or with another limit (the all-or-nothing script).
          if (together) await limitAll([limiter, other].map((l) => ({ limiter: l, key: 'k', options: { nowMs: now } })));
          else await limiter.limit('k', { nowMs: now });
          // Redis's clock has moved a few ms since the write: 50 ms of slack, far under any window.
          expect(await raw.pttl(limiter.keyOf('k'))).toBeGreaterThanOrEqual(needMs(algorithm, now) - 50);
        }
      }),
      { numRuns: 25 },
    );
  });
});
