// A submit's lane unit and its BullMQ job are written by one script call (lua/throttle-admit.lua): no
// moment exists at which one is there without the other. Held here where the old two-step submit could
// split them: submitters SIGKILLed mid-flight, and deadlines that pass while admissions are on the way.
// (An empty Redis restart under submit load: empty-restart.test.ts.)
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { isSluiceError, type Throttle } from '../../../src/index.js';
import { startTsProcess } from '../../helpers/processes.js';
import { uniquePrefix, useBackend } from '../../helpers/fixtures.js';

const ctx = useBackend('single');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The BullMQ job ids and the lane members (job ids) of a throttle, read from Redis. */
async function jobsAndUnits(raw: Redis, prefix: string, name: string): Promise<{ jobs: Set<string>; units: Set<string> }> {
  const tag = `${prefix}:v1:{t:${name}}`;
  const jobs = new Set<string>();
  for (const k of await raw.keys(`${tag}:bull:${name}:*`)) {
    const id = k.slice(`${tag}:bull:${name}:`.length);
    if (!id.includes(':') && (await raw.type(k)) === 'hash' && (await raw.hexists(k, 'data'))) jobs.add(id);
  }
  const units = new Set<string>();
  for (const q of await raw.keys(`${tag}:l:*:q`)) for (const m of await raw.zrange(q, '0', '-1')) units.add(m.slice(0, m.lastIndexOf('|')));
  return { jobs, units };
}

describe('a submit never leaves a job without its lane unit, nor a unit without its job', () => {
  it('submitters SIGKILLed in the middle of their submits (3 processes x 16 loops)', { timeout: 60_000 }, async () => {
    const prefix = uniquePrefix();
    const name = 'killed';
    const config = { ratePerSecond: 1_000, capacity: 1_000_000 };
    const children = Array.from({ length: 3 }, () =>
      startTsProcess('helpers/submit-loop.ts', [ctx.backend.server!.url, prefix, name, JSON.stringify(config), '16']),
    );
    await Promise.all(children.map((c) => c.message('running')));
    await sleep(800);
    for (const c of children) c.child.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited.catch(() => undefined)));
    const { jobs, units } = await jobsAndUnits(ctx.backend.raw as Redis, prefix, name);
    console.log(JSON.stringify({ jobs: jobs.size, units: units.size }));
    expect(jobs.size).toBeGreaterThan(100); // they were submitting when killed
    expect([...jobs].filter((id) => !units.has(id))).toEqual([]);
    expect([...units].filter((id) => !jobs.has(id))).toEqual([]);
    // Nothing for lane repair to find: no admission is waiting for its job.
    expect(await (ctx.backend.raw as Redis).zcard(`${prefix}:v1:{t:${name}}:pend`)).toBe(0);
  });

  it('deadlines that pass while the admissions are on the way: the job and its unit both, or neither', { timeout: 30_000 }, async () => {
    const prefix = uniquePrefix();
    const sluice = ctx.backend.sluice({ prefix });
    const name = 'late';
    const throttle: Throttle = sluice.throttle(name, { ratePerSecond: 100, capacity: 10_000, submitTimeoutMs: 30 });
    await throttle.ready();
    const raw = ctx.backend.raw as Redis;
    // Redis holds every client's commands for 300 ms: the admissions sent meanwhile run after their deadline.
    await raw.client('PAUSE', 300, 'ALL');
    const ids = Array.from({ length: 40 }, (_, i) => `late-${i}`);
    const outcomes = await Promise.all(
      ids.map((id, i) =>
        throttle.submit(`k${i % 4}`, { i }, { id }).then(
          (r) => ({ id, ok: r.admitted, jobId: r.admitted ? r.jobId : undefined }),
          (error: unknown) => ({ id, ok: false, error }),
        ),
      ),
    );
    const failed = outcomes.filter((o) => 'error' in o);
    expect(failed.length).toBe(ids.length);
    expect(failed.every((o) => isSluiceError((o as { error: unknown }).error, 'SLUICE_ERR_REDIS_UNAVAILABLE'))).toBe(true);
    await sleep(400);
    const { jobs, units } = await jobsAndUnits(raw, prefix, name);
    expect([...jobs].sort()).toEqual([...units].sort());
    // The admissions were on the way when their deadline passed: they ran, each with its job; a retry
    // with the same idempotency id answers that job (duplicate), and nothing is queued twice.
    expect(jobs.size).toBe(ids.length);
    const retries = await Promise.all(ids.map((id, i) => throttle.submit(`k${i % 4}`, { i }, { id })));
    expect(retries.every((r) => r.admitted && r.duplicate === true && jobs.has(r.jobId))).toBe(true);
    expect((await jobsAndUnits(raw, prefix, name)).units.size).toBe(ids.length);

  });
});
