// Pacing where the call leaves (issue 11, item 3): `job.assertOnTime()` lets a call leave only within the
// queue's send headroom after its start instant; a call that would leave later goes back to its lane,
// ahead of every job not handed out yet, without using an attempt, and is dispatched again. The headroom widens the
// spacing of the starts. One process, real Redis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LateSend, type ThrottledJob } from '../../../src/index.js';
import { timingOf, throttleConfigSchema } from '../../../src/throttle/config.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

let backend: Backend;
beforeAll(async () => {
  backend = await startBackend('single');
});
afterAll(async () => {
  await backend?.dispose();
});

describe('the send headroom', () => {
  it('widens the spacing of the starts: the margin is max(pacing margin, headroom / 1 s)', () => {
    const margin = (input: object) => timingOf(throttleConfigSchema.parse({ ratePerSecond: 10, capacity: 1, ...input })).marginPpm;
    expect(margin({})).toBe(10_000);
    expect(margin({ upstream: { sendHeadroomMs: 50 } })).toBe(50_000);
    expect(margin({ pacingMargin: 0.03, upstream: { sendHeadroomMs: 20 } })).toBe(30_000);
  });

  it('a call that would leave too late goes back at its place, no attempt used, and leaves on a later start', async () => {
    const sluice = backend.sluice({ prefix: uniquePrefix() });
    // 2/s with a 50 ms headroom: ordinary timer jitter never trips it, the 120 ms below always does, and
    // job 0 gives up long before job 1 is handed out (475 ms after job 0's start).
    const throttle = sluice.throttle('late', { ratePerSecond: 2, capacity: 10, upstream: { sendHeadroomMs: 50 } });
    const sent: { n: number; lateMs: number }[] = [];
    const refusals: string[] = [];
    let slowFirst = true;
    const worker = sluice.worker(
      'late',
      async (job: ThrottledJob<{ n: number }>) => {
        const startedAt = performance.now();
        // The first call of job 0 is slow to prepare (120 ms, beyond the headroom).
        if (job.data.n === 0 && slowFirst) {
          slowFirst = false;
          await new Promise((r) => setTimeout(r, 120));
        }
        try {
          job.assertOnTime();
        } catch (error) {
          refusals.push((error as Error).name);
          throw error;
        }
        sent.push({ n: job.data.n, lateMs: performance.now() - startedAt });
      },
      { concurrency: 1 },
    );
    await worker.waitUntilReady();
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) {
      const r = await throttle.submit('k', { n });
      if (r.admitted) ids.push(r.jobId);
    }
    await until(async () => (await Promise.all(ids.map((id) => throttle.job(id)))).every((s) => s?.state === 'completed'), 15_000, 'all three');
    expect(refusals).toEqual(['LateSend']);
    // Job 0 went back ahead of the jobs not handed out yet: still first.
    expect(sent.map((s) => s.n)).toEqual([0, 1, 2]);
    for (const s of sent) expect(s.lateMs).toBeLessThanOrEqual(50);
    const states = await Promise.all(ids.map((id) => throttle.job(id)));
    expect(states.map((s) => s?.attemptsMade)).toEqual([1, 1, 1]);
    expect(new LateSend(12.34, 10).message).toBe('the call would leave 12.3 ms after its start, beyond the send headroom of 10 ms');
    await worker.close();
    await sluice.close();
  });
});
