// A deep backlog in fast lanes (each faster than one start per dispatch horizon) drained by one worker:
// the dispatchers used to hand out rounds of 256 jobs faster than the worker could take them, so every
// job reached it late, went back to its lane and was handed out again — no start at all, thousands of
// hand-backs per second, for as long as anyone waited (30 s measured). With the dispatchers'
// back-pressure every job starts, once. The bound is liveness (all started), not a rate: on the old code
// this test never finished; rates are held by the *.timing tests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ThrottledJob } from '../../../src/index.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

let backend: Backend;
beforeAll(async () => {
  backend = await startBackend('single');
});
afterAll(async () => {
  await backend?.dispose();
});

const LANES = 20;
const PER_LANE = 100;

describe('a deep backlog in fast lanes', () => {
  it('drains: every job starts once, however late the worker takes them', { timeout: 90_000 }, async () => {
    let handBacks = 0;
    const sluice = backend.sluice({ prefix: uniquePrefix(), observer: { onDecision: () => undefined, onDefer: () => void handBacks++ } });
    const throttle = sluice.throttle('deep', { ratePerSecond: 500, capacity: PER_LANE, keepCompleted: { count: 0 }, submitTimeoutMs: 30_000 });
    const submitted: string[] = [];
    for (let j = 0; j < PER_LANE; j++) {
      const round = await Promise.all(Array.from({ length: LANES }, (_, l) => throttle.submit(`k${l}`, { l, j })));
      for (const r of round) {
        expect(r.admitted).toBe(true);
        if (r.admitted) submitted.push(r.jobId);
      }
    }
    const ran = new Map<string, number>();
    // No-op handlers, 50 at once, one process: the dispatchers, not the handlers, decide the pace.
    const worker = sluice.worker('deep', (job: ThrottledJob) => void ran.set(job.id, (ran.get(job.id) ?? 0) + 1), { concurrency: 50 });
    await until(() => ran.size === submitted.length, 60_000, `all ${submitted.length} jobs started`);
    await worker.close();
    expect([...ran.keys()].sort()).toEqual([...submitted].sort());
    expect([...ran.values()].every((n) => n === 1)).toBe(true);
  });
});
