// Throttle semantics on one process: weighted cost (property 4), idempotent submit (5), bad input,
// in-process schedule() (9), lane state, and lane repair after a submitter died mid-admission.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isSluiceError, type Sluice, type ThrottledJob } from '../../../src/index.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';
import { laneMember } from '../../../src/throttle/keys.js';

let backend: Backend;
beforeAll(async () => {
  backend = await startBackend('single');
});
afterAll(async () => {
  await backend?.dispose();
});

function fresh(): Sluice {
  return backend.sluice({ prefix: uniquePrefix() });
}

describe('weighted cost', () => {
  it('a job of cost c uses c slots of the lane rate', async () => {
    const sluice = fresh();
    const throttle = sluice.throttle('weighted', { ratePerSecond: 20, capacity: 100 });
    const starts: { cost: number; slotUs: number }[] = [];
    const worker = sluice.worker(
      'weighted',
      (job: ThrottledJob) => void starts.push({ cost: job.cost, slotUs: Math.round(job.slotMs * 1000) }),
      { concurrency: 5 },
    );
    await worker.waitUntilReady();
    const costs = [3, 1, 4, 1, 2, 1];
    for (const cost of costs) expect((await throttle.submit('w', { cost }, { cost })).admitted).toBe(true);
    await until(() => starts.length === costs.length, 10_000, 'all starts');
    starts.sort((a, b) => a.slotUs - b.slotUs);
    expect(starts.map((s) => s.cost)).toEqual(costs);
    // After a job of cost c, the next start instant is at least c x 50 ms (x 1.01, the pacing margin)
    // later, exactly so in µs when nothing came late (a start that came late only moves later).
    const span = (c: number) => Math.floor(c * 50_000 * 1.01);
    for (let i = 1; i < starts.length; i++) expect(starts[i]!.slotUs - starts[i - 1]!.slotUs).toBeGreaterThanOrEqual(span(starts[i - 1]!.cost));
    // And no more than that in all, give or take what a loaded machine adds (a late start costs one round).
    const total = costs.slice(0, -1).reduce((a, c) => a + span(c), 0);
    expect(starts.at(-1)!.slotUs - starts[0]!.slotUs).toBeLessThan(total + 150_000);
    await worker.close();
  });

  it('admission counts cost against the capacity', async () => {
    const throttle = fresh().throttle('capacity', { ratePerSecond: 1, capacity: 10 });
    expect((await throttle.submit('k', {}, { cost: 6, nowMs: 1e12 })).admitted).toBe(true);
    expect((await throttle.submit('k', {}, { cost: 4, nowMs: 1e12 })).admitted).toBe(true);
    const refused = await throttle.submit('k', {}, { cost: 1, nowMs: 1e12 });
    expect(refused).toMatchObject({ admitted: false, reason: 'queue_full' });
    expect(await throttle.lane('k', { nowMs: 1e12 })).toMatchObject({ depth: 10, jobs: 2, capacity: 10 });
  });
});

describe('idempotent submit', () => {
  it('the same id is admitted once; the second call returns the first job, before and after it ran', async () => {
    const sluice = fresh();
    const throttle = sluice.throttle('idem', { ratePerSecond: 50, capacity: 10 });
    const first = await throttle.submit('k', { n: 1 }, { id: 'order-42' });
    const again = await throttle.submit('k', { n: 2 }, { id: 'order-42' });
    expect(first.admitted && again.admitted).toBe(true);
    if (!first.admitted || !again.admitted) return;
    expect(again).toMatchObject({ jobId: first.jobId, duplicate: true, startsAtMs: first.startsAtMs });
    expect((await throttle.lane('k')).jobs).toBe(1);

    const ran: unknown[] = [];
    const worker = sluice.worker('idem', (job: ThrottledJob) => void ran.push(job.data), { concurrency: 2 });
    await until(async () => (await throttle.job(first.jobId))?.state === 'completed', 10_000, 'completion');
    const later = await throttle.submit('k', { n: 3 }, { id: 'order-42' });
    expect(later).toMatchObject({ admitted: true, jobId: first.jobId, duplicate: true });
    await new Promise((r) => setTimeout(r, 300));
    expect(ran).toEqual([{ n: 1 }]);
    await worker.close();
  });

  it('concurrent submits with one id admit one job', async () => {
    const throttle = fresh().throttle('idem2', { ratePerSecond: 5, capacity: 100 });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => throttle.submit('k', { i }, { id: 'same' })));
    const ids = new Set(results.map((r) => (r.admitted ? r.jobId : 'refused')));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.admitted && !r.duplicate).length).toBe(1);
    expect((await throttle.lane('k')).jobs).toBe(1);
  });
});

describe('bad input', () => {
  const throttleOf = () => fresh().throttle('bad', { ratePerSecond: 5, capacity: 3, maxPayloadBytes: 100 });

  it.each([
    ['zero capacity', { ratePerSecond: 5, capacity: 0 }, 'capacity'],
    ['negative rate', { ratePerSecond: -1, capacity: 5 }, 'ratePerSecond'],
    ['zero rate', { ratePerSecond: 0, capacity: 5 }, 'ratePerSecond'],
    ['non-integer capacity', { ratePerSecond: 1, capacity: 2.5 }, 'capacity'],
    ['unknown field', { ratePerSecond: 1, capacity: 2, speed: 3 }, 'speed'],
  ])('refuses a throttle with %s', (_name, config, field) => {
    let error: unknown;
    try {
      fresh().throttle('x', config as never);
    } catch (e) {
      error = e;
    }
    expect(isSluiceError(error, 'SLUICE_ERR_INVALID_THROTTLE')).toBe(true);
    expect((error as Error).message).toContain(field);
  });

  it.each([
    ['a non-integer cost', { cost: 1.5 }, 'SLUICE_ERR_INVALID_COST', {}],
    ['a zero cost', { cost: 0 }, 'SLUICE_ERR_INVALID_COST', {}],
    ['a cost above the capacity', { cost: 4 }, 'SLUICE_ERR_INVALID_COST', {}],
    ['a function payload', {}, 'SLUICE_ERR_INVALID_PAYLOAD', { f: () => 1 }],
    ['a BigInt payload', {}, 'SLUICE_ERR_INVALID_PAYLOAD', { n: 1n }],
    ['a NaN payload', {}, 'SLUICE_ERR_INVALID_PAYLOAD', { n: Number.NaN }],
    ['an undefined payload', {}, 'SLUICE_ERR_INVALID_PAYLOAD', undefined],
    ['an oversized payload', {}, 'SLUICE_ERR_PAYLOAD_TOO_LARGE', { s: 'x'.repeat(200) }],
  ])('refuses %s at the call and enqueues nothing', async (_name, options, code, payload) => {
    const throttle = throttleOf();
    let error: unknown;
    try {
      await throttle.submit('k', payload, options);
    } catch (e) {
      error = e;
    }
    expect(isSluiceError(error, code as never)).toBe(true);
    expect(await throttle.lane('k')).toMatchObject({ depth: 0, jobs: 0 });
  });

  it('refuses a cyclic payload', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expect(throttleOf().submit('k', cyclic)).rejects.toMatchObject({ code: 'SLUICE_ERR_INVALID_PAYLOAD' });
  });
});

describe('schedule() in-process', () => {
  it('paces calls through the lane and resolves with their results', async () => {
    const throttle = fresh().throttle('sched', { ratePerSecond: 20, capacity: 50 });
    const t0 = performance.now();
    const times: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        throttle.schedule('k', () => {
          times.push(performance.now() - t0);
          return i * 10;
        }),
      ),
    );
    expect(results).toEqual([0, 10, 20, 30, 40, 50]);
    times.sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(50 * 1.01 - 11);
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(5 * 50 * 1.01 - 11);
    expect(await throttle.lane('k')).toMatchObject({ depth: 0, jobs: 0 });
  });

  it('rejects with SLUICE_ERR_QUEUE_FULL when the lane is full', async () => {
    const throttle = fresh().throttle('sched2', { ratePerSecond: 1, capacity: 2 });
    const pending = [throttle.schedule('k', () => 1), throttle.schedule('k', () => 2)];
    await expect(throttle.schedule('k', () => 3)).rejects.toMatchObject({ code: 'SLUICE_ERR_QUEUE_FULL', details: { reason: 'queue_full' } });
    expect(await Promise.all(pending)).toEqual([1, 2]);
  });
});

describe('lane repair', () => {
  it('removes a queued member whose job never reached the queue (its submitter died)', async () => {
    const sluice = fresh();
    const throttle = sluice.throttle('repair', { ratePerSecond: 100, capacity: 3 });
    await throttle.submit('k', {}); // makes the queue and publishes the configuration
    // What a submitter that died right after admission leaves behind: a member, no BullMQ job.
    const lanes = throttle['admitLanes' as keyof typeof throttle] as unknown as { admit: (...a: unknown[]) => Promise<unknown> };
    await lanes.admit(throttle.keys.laneId('k'), 'jghost', 1, false, String((Date.now() - 600_000) * 1000));
    expect((await throttle.lane('k')).jobs).toBe(2);
    const worker = sluice.worker('repair', () => undefined, { repairIntervalMs: 100, repairAfterMs: 1_000 });
    await until(async () => (await throttle.lane('k')).jobs === 0, 5_000, 'the ghost to be repaired');
    expect((await throttle.lane('k')).depth).toBe(0);
    await worker.close();
  });
});

describe('a deferred job whose worker died between parking it and putting it back', () => {
  it('runs again within a repair pass: its worker marked it in the dispatched set first', async () => {
    const sluice = fresh();
    const throttle = sluice.throttle('markdefer', { ratePerSecond: 100, capacity: 3 });
    const r = await throttle.submit('k', { n: 1 });
    if (!r.admitted) throw new Error('not admitted');
    const laneId = throttle.keys.laneId('k');
    const gate = throttle.gateLanes;
    // The job left its lane and started (its member gone from the lane), its upstream said "later": its
    // worker marked it (11 s ago, past lane repair's 10 s) and parked it in BullMQ's delayed set (where
    // the submit left it), then died before the 'requeue'. Without the mark it would wait out the park's hour.
    expect(await gate.release(laneId, [laneMember(r.jobId, 1)])).toBe(1);
    expect(await gate.start(laneId, r.jobId, 1, { mode: 'mark' }, String((Date.now() - 11_000) * 1000))).toMatchObject({ go: false });
    const ran: unknown[] = [];
    const worker = sluice.worker('markdefer', (job: ThrottledJob) => void ran.push(job.data), { repairIntervalMs: 100 });
    await until(async () => (await throttle.job(r.jobId))?.state === 'completed', 10_000, 'the parked job to run again');
    expect(ran).toEqual([{ n: 1 }]);
    expect(await throttle.lane('k')).toMatchObject({ depth: 0, jobs: 0 });
    await worker.close();
  });
});

describe('idempotent submit after a lost enqueue', () => {
  it('a repeated id re-creates the job its first submit admitted but never enqueued', async () => {
    const sluice = fresh();
    const throttle = sluice.throttle('lost', { ratePerSecond: 50, capacity: 5 });
    await throttle.submit('k', { warm: true }); // the queue exists and the configuration is published
    // What a submit that timed out after its admission ran leaves behind: the member, no BullMQ job.
    const jobId = throttle.keys.jobId('order-7');
    const lanes = throttle['admitLanes' as keyof typeof throttle] as unknown as { admit: (...a: unknown[]) => Promise<unknown> };
    await lanes.admit(throttle.keys.laneId('k'), jobId, 1, true, '');
    expect(await throttle.job(jobId)).toBeNull();
    const again = await throttle.submit('k', { n: 7 }, { id: 'order-7' });
    expect(again).toMatchObject({ admitted: true, jobId, duplicate: true });
    expect((await throttle.job(jobId))?.state).toBe('queued');
    const ran: unknown[] = [];
    const worker = sluice.worker('lost', (job: ThrottledJob) => void ran.push(job.data));
    await until(async () => (await throttle.job(jobId))?.state === 'completed', 10_000, 'the repaired job to run');
    expect(ran).toContainEqual({ n: 7 });
    expect(await throttle.lane('k')).toMatchObject({ depth: 0, jobs: 0 });
    await worker.close();
  });
});
