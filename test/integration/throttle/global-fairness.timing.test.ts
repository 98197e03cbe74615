// Property 3: a global cap with fairness. With globalRatePerSecond G below the sum of the busy keys'
// rates, total starts stay <= G in every second, the busy keys share G fairly (Jain's index >= 0.95),
// and an idle key's first job starts within one of its emission intervals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sluice } from '../../../src/index.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { ThrottleProc, jain, maxInWindow, until } from '../../helpers/throttle-procs.js';

const LANE_RATE = 20; // per key: one start per 50 ms
const GLOBAL = 50; // five busy keys would want 100/s
const KEYS = ['k1', 'k2', 'k3', 'k4', 'k5'];
const JOBS_PER_KEY = 40;
const config = { ratePerSecond: LANE_RATE, capacity: 200, globalRatePerSecond: GLOBAL };

describe('global cap', () => {
  let backend: Backend;
  let sluice: Sluice;
  const procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend('single');
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.close()));
    await backend?.dispose();
  });

  it(`5 busy keys at ${LANE_RATE}/s each under a cap of ${GLOBAL}/s share it fairly; an idle key starts at once`, async () => {
    const prefix = uniquePrefix();
    sluice = backend.sluice({ prefix });
    const throttle = sluice.throttle('upstream', config);
    const workers = await Promise.all([0, 1].map(() => ThrottleProc.start(backend, prefix, 'upstream', config)));
    procs.push(...workers);
    await Promise.all(workers.map((w) => w.worker(20)));
    for (let i = 0; i < JOBS_PER_KEY; i++) {
      for (const key of KEYS) expect((await throttle.submit(key, { key, i })).admitted).toBe(true);
    }
    const starts = () => workers.flatMap((w) => w.starts);
    await until(() => starts().length >= 60, 10_000, 'the busy phase');

    // An idle key submits one job while the others are busy.
    const submittedAt = performance.timeOrigin + performance.now();
    expect((await throttle.submit('idle', { key: 'idle' })).admitted).toBe(true);
    await until(() => starts().some((s) => s.tag === undefined && s.lane === 'idle'), 5_000, 'the idle key to start');
    const idleStart = starts().find((s) => s.lane === 'idle')!;
    expect(idleStart.t - submittedAt).toBeLessThanOrEqual(1000 / LANE_RATE);

    await until(() => starts().length >= KEYS.length * JOBS_PER_KEY + 1, 20_000, 'all starts');
    const all = starts().sort((a, b) => a.t - b.t);
    expect(maxInWindow(all.map((s) => s.t), 1_000)).toBeLessThanOrEqual(GLOBAL);

    // Fair share while every key is busy: from the first start until the first key runs dry.
    const lastOfEach = KEYS.map((k) => Math.max(...all.filter((s) => s.lane === k).map((s) => s.t)));
    const from = all[0]!.t;
    const to = Math.min(...lastOfEach);
    const perKey = KEYS.map((k) => all.filter((s) => s.lane === k && s.t >= from && s.t < to).length);
    expect(jain(perKey)).toBeGreaterThanOrEqual(0.95);
    const achieved = all.filter((s) => s.t >= from && s.t < to).length / ((to - from) / 1000);
    expect(achieved).toBeLessThanOrEqual(GLOBAL);
  });
});
