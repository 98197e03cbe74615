// Property 2: the outflow rate per key is enforced where work starts. A backlog that built up while
// no worker ran drains at the rate when two worker processes come up — no burst — and no 1-second
// window of the workers' own start timestamps ever holds more than `rate` starts, while the achieved
// rate stays >= 98% of the configured one (work-conserving).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sluice } from '../../../src/index.js';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { ThrottleProc, maxInWindow, until } from '../../helpers/throttle-procs.js';

const RATE = 20;
const JOBS = 180;
const config = { ratePerSecond: RATE, capacity: 500 };

describe.each(TOPOLOGIES)('outflow per key (%s)', (topology) => {
  let backend: Backend;
  let sluice: Sluice;
  const procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend(topology);
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.close()));
    await backend?.dispose();
  });

  it(`a backlog of ${JOBS} drains at ${RATE}/s across 2 worker processes: never more than ${RATE} starts in any second`, async () => {
    const prefix = uniquePrefix();
    sluice = backend.sluice({ prefix });
    const throttle = sluice.throttle('outflow', config);
    for (let i = 0; i < JOBS; i++) expect((await throttle.submit('tenant-a', { i })).admitted).toBe(true);
    // Every job is now due or overdue while no worker runs.
    await new Promise((r) => setTimeout(r, 1_000));

    const workers = await Promise.all([0, 1].map(() => ThrottleProc.start(backend, prefix, 'outflow', config)));
    procs.push(...workers);
    await Promise.all(workers.map((w) => w.worker(10)));
    await until(() => workers.reduce((n, w) => n + w.starts.length, 0) >= JOBS, 30_000, 'all starts');

    const starts = workers.flatMap((w) => w.starts);
    const times = starts.map((s) => s.t).sort((a, b) => a - b);
    expect(new Set(starts.map((s) => s.id)).size).toBe(JOBS); // each job started once
    expect(workers.every((w) => w.starts.length > 0)).toBe(true); // both processes took part
    expect(maxInWindow(times, 1_000)).toBeLessThanOrEqual(RATE); // no burst, not even right after the outage
    const achieved = (times.length - 1) / ((times.at(-1)! - times[0]!) / 1_000);
    const gaps = times.slice(1).map((t, i) => Math.round(t - times[i]!)).join(' ');
    expect(achieved, `gaps between starts (ms): ${gaps}`).toBeGreaterThanOrEqual(0.98 * RATE);
    expect(achieved).toBeLessThanOrEqual(RATE);
    expect((await throttle.lane('tenant-a')).depth).toBe(0);
  });
});
