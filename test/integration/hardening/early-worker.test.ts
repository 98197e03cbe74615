// A worker process started before any process published its throttle's configuration says it waits,
// and starts jobs as soon as the configuration appears. Issue 8, defect 12.
import { describe, expect, it } from 'vitest';
import { startTsProcess } from '../../helpers/processes.js';
import { useBackend, uniquePrefix } from '../../helpers/fixtures.js';

const ctx = useBackend('single');

describe('a worker started before its throttle is configured', () => {
  it('logs that it waits, then runs the first job once a submitter publishes the configuration', { timeout: 45_000 }, async () => {
    const prefix = uniquePrefix();
    const child = startTsProcess('helpers/early-worker.ts', [ctx.backend.server!.url, prefix, 'late']);
    try {
      const waiting = await child.message<{ message: string }>('log');
      expect(waiting.message).toMatch(/throttle 'late' has no published configuration yet: the worker waits for it/);
      await new Promise((r) => setTimeout(r, 1_500)); // still waiting, not failed
      expect(child.child.exitCode).toBeNull();
      const sluice = ctx.backend.sluice({ prefix });
      const submitted = await sluice.throttle('late', { ratePerSecond: 10, capacity: 10 }).submit('k', { n: 1 });
      expect(submitted.admitted).toBe(true);
      const found = await child.message<{ message: string }>('log');
      expect(found.message).toMatch(/configuration published; worker starting/);
      await child.message('worker-ready');
      const start = await child.message<{ id: string; data: unknown }>('start');
      expect(start).toMatchObject({ id: submitted.admitted ? submitted.jobId : '', data: { n: 1 } });
    } finally {
      child.child.kill('SIGKILL');
    }
  });
});
