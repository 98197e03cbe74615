// A worker process slower than its lane keeps the lane's order. Its jobs come late to their starts (the
// handler slot is busy); a late job's fresh start moves the lane's later jobs this process holds with it
// (src/throttle/held-starts.ts, lua/throttle-start.lua movable_later). Before, each late job took a start
// behind those held jobs, and the process reordered its own lane. Real Redis, one worker, one handler.
import { afterAll, describe, expect, it } from 'vitest';
import type { ThrottledJob } from '../../../src/index.js';
import { useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

const ctx = useBackend('single');
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const close of closers) await close();
});

describe('a worker slower than its lane', () => {
  it.each([
    ['an awaiting handler', false],
    ['a handler that blocks the event loop', true],
  ])('runs the lane in its order with %s', async (_name, blocks) => {
    const sluice = ctx.backend.sluice();
    const name = `slow-fifo-${blocks ? 'b' : 'a'}`;
    const throttle = sluice.throttle(name, { ratePerSecond: 100_000, capacity: 100 });
    const submitted: string[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await throttle.submit('k', i);
      if (!r.admitted) throw new Error('not admitted');
      submitted.push(r.jobId);
    }
    const ran: string[] = [];
    const worker = sluice.worker(
      name,
      async (job: ThrottledJob) => {
        ran.push(job.id);
        if (blocks) {
          const t = performance.now();
          while (performance.now() - t < 2);
        } else await new Promise((r) => setTimeout(r, 2));
      },
      { concurrency: 1 },
    );
    closers.push(() => worker.close());
    await until(() => ran.length === 40, 20_000, 'all 40 jobs run');
    // Each run job's place in the submit order (a readable diff when one is out of place).
    expect(ran.map((id) => submitted.indexOf(id))).toEqual(submitted.map((_, i) => i));
  });
});
