// Job events on a 3-master cluster: the event stream lives in the throttle's hash tag, so the submit's
// XADD, the worker's and the reader's XREAD all go to the throttle's slot; a subscriber in another
// instance sees the job's transitions and waitForResult answers.
import { describe, expect, it } from 'vitest';
import type { ThrottledJob } from '../../../src/index.js';
import type { JobEvent } from '../../../src/throttle/events.js';
import { uniquePrefix, useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

const ctx = useBackend('cluster');

describe('events on a cluster', () => {
  it('admitted, started, progress, completed reach a subscriber in another instance', async () => {
    const prefix = uniquePrefix();
    const [submitter, worker, watcher] = [ctx.backend.sluice({ prefix }), ctx.backend.sluice({ prefix }), ctx.backend.sluice({ prefix })];
    const config = { ratePerSecond: 20, capacity: 5 };
    const throttle = submitter.throttle('evc', config);
    const seen: JobEvent[] = [];
    await watcher.throttle('evc', config).events.subscribe((e) => seen.push(e));
    const w = worker.worker('evc', async (job: ThrottledJob) => {
      await job.progress(1);
      return job.data;
    }, { config });
    await w.waitUntilReady();
    const r = await throttle.submit('k', 'x');
    if (!r.admitted) throw new Error('not admitted');
    expect(await throttle.waitForResult(r.jobId, { timeoutMs: 15_000 })).toBe('x');
    await until(() => seen.some((e) => e.type === 'completed'), 5_000, 'the completed event');
    expect(seen.map((e) => [e.type, e.jobId])).toEqual([
      ['admitted', r.jobId],
      ['started', r.jobId],
      ['progress', r.jobId],
      ['completed', r.jobId],
    ]);
    await w.close();
  });
});
