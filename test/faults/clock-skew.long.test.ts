// Fault family "clock skew between worker processes": three worker processes whose wall clocks are
// 500 ms behind, right and 500 ms ahead (test/helpers/clock-skew-preload.mjs) drain one backlog. The
// gate decides in Redis time and each process learns its offset to it, so the outflow must still
// never exceed the rate in any 1 s window of true time.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackend, uniquePrefix, type Backend } from '../helpers/fixtures.js';
import { reportFigure } from '../helpers/figures.js';
import { ThrottleProc, maxInWindow, until } from '../helpers/throttle-procs.js';

const RATE = 20;
const JOBS = 100;
const SKEWS_MS = [-500, 0, 500];
const config = { ratePerSecond: RATE, capacity: 500 };
const PRELOAD = fileURLToPath(new URL('../helpers/clock-skew-preload.mjs', import.meta.url));

describe('clock skew between worker processes (±500 ms)', () => {
  let backend: Backend;
  const procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend('single');
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.close()));
    await backend?.dispose();
  });

  it(`a backlog of ${JOBS} drains at ${RATE}/s across skewed workers: never more than ${RATE} starts in any second`, async () => {
    const prefix = uniquePrefix();
    const sluice = backend.sluice({ prefix });
    const throttle = sluice.throttle('skew', config);
    for (let i = 0; i < JOBS; i++) expect((await throttle.submit('tenant', { i })).admitted).toBe(true);

    const workers: { proc: ThrottleProc; skew: number }[] = [];
    for (const skew of SKEWS_MS) {
      const proc = await ThrottleProc.start(backend, prefix, 'skew', config, {}, { NODE_OPTIONS: `--import ${PRELOAD}`, SLUICE_TEST_CLOCK_SKEW_MS: String(skew) });
      procs.push(proc);
      workers.push({ proc, skew });
    }
    await Promise.all(workers.map((w) => w.proc.worker(10)));
    await until(() => workers.reduce((n, w) => n + w.proc.starts.length, 0) >= JOBS, 60_000, 'all starts');

    // Each process reports its start on its own (skewed) clock: take the skew off to get true time.
    const starts = workers.flatMap((w) => w.proc.starts.map((s) => ({ ...s, trueT: s.t - w.skew, skew: w.skew })));
    const times = starts.map((s) => s.trueT).sort((a, b) => a - b);
    const skewedTimes = starts.map((s) => s.t).sort((a, b) => a - b);
    const achieved = (times.length - 1) / ((times.at(-1)! - times[0]!) / 1_000);
    const figure = {
      ratePerSecond: RATE,
      skewsMs: SKEWS_MS,
      starts: starts.length,
      startsPerWorker: Object.fromEntries(workers.map((w) => [String(w.skew), w.proc.starts.length])),
      maxStartsInAny1sTrueTime: maxInWindow(times, 1_000),
      maxStartsInAny1sAsReported: maxInWindow(skewedTimes, 1_000),
      achievedPerSecond: Math.round(achieved * 100) / 100,
    };
    reportFigure('clock-skew', figure);

    expect(new Set(starts.map((s) => s.id)).size).toBe(JOBS);
    expect(workers.filter((w) => w.proc.starts.length > 0).length).toBeGreaterThanOrEqual(2);
    expect(figure.maxStartsInAny1sTrueTime).toBeLessThanOrEqual(RATE);
    expect(achieved).toBeLessThanOrEqual(RATE);
    expect((await throttle.lane('tenant')).depth).toBe(0);
  }, 120_000);
});
