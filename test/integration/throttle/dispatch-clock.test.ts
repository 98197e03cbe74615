// Every dispatch round teaches the process's view of Redis's clock (src/throttle/redis-clock.ts): its reply
// carries Redis TIME, read after the call left, so each round is one more upper bound on the offset the
// workers start jobs by. A worker process's first starts then no longer rest on its first few gate calls
// alone. Real Redis: on the same host, Redis's clock and this process's wall clock are one clock.
import { describe, expect, it } from 'vitest';
import { Dispatcher } from '../../../src/throttle/dispatcher.js';
import { RedisClock } from '../../../src/throttle/redis-clock.js';
import { useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

describe('dispatch rounds and the Redis clock', () => {
  const ctx = useBackend('single');

  it('a dispatcher with nothing to hand out still sets the clock offset, to an upper bound of the true one', async () => {
    const throttle = ctx.sluice.throttle('clock', { ratePerSecond: 10, capacity: 5 });
    const clock = new RedisClock();
    const dispatcher = new Dispatcher({ lanes: throttle.gateLanes, keys: throttle.keys, client: ctx.sluice.redis, horizonUs: throttle.timing.leadUs, clock });
    expect(clock.offsetMs).toBe(Number.POSITIVE_INFINITY);
    const before = performance.timeOrigin + performance.now();
    dispatcher.acquire();
    try {
      await until(() => Number.isFinite(clock.offsetMs), 5_000, 'a round');
    } finally {
      await dispatcher.release();
    }
    // One clock: the offset is the best round's latency, at least 0 and far less than the wait above.
    expect(clock.offsetMs).toBeGreaterThanOrEqual(-1);
    expect(clock.offsetMs).toBeLessThan(performance.timeOrigin + performance.now() - before);
  });
});
