// A submitter SIGKILLed between admission and enqueue leaves lane units with no job: a worker with the
// default settings frees them within 10 s, from the index of pending admissions (no walk over every
// lane). Issue 8, defect 4.
import { describe, expect, it } from 'vitest';
import { startTsProcess } from '../../helpers/processes.js';
import { useBackend, uniquePrefix } from '../../helpers/fixtures.js';

const ctx = useBackend('single');

describe('lane units leaked by a submitter that died before its enqueue', () => {
  it('are freed within 10 s by a worker with the default repair settings', { timeout: 40_000 }, async () => {
    const prefix = uniquePrefix();
    const config = { ratePerSecond: 1, capacity: 20 };
    const child = startTsProcess('helpers/admit-and-die.ts', [ctx.backend.server!.url, prefix, 'leak', JSON.stringify(config), '20']);
    await child.message('admitted');
    await child.exited;
    const diedAt = Date.now();
    const sluice = ctx.backend.sluice({ prefix });
    const throttle = sluice.throttle('leak', config);
    const depth = async () => (await Promise.all([0, 1, 2, 3, 4].map((i) => throttle.lane(`key${i}`)))).reduce((n, l) => n + l.depth, 0);
    expect(await depth()).toBe(20); // 4 units held in each of 5 lanes, by jobs that do not exist
    const worker = sluice.worker('leak', () => undefined); // defaults: repairIntervalMs, repairAfterMs
    await worker.waitUntilReady();
    while ((await depth()) > 0 && Date.now() - diedAt < 15_000) await new Promise((r) => setTimeout(r, 100));
    const tookMs = Date.now() - diedAt;
    console.log(JSON.stringify({ repairedWithinMs: tookMs }));
    expect(await depth()).toBe(0);
    expect(tookMs).toBeLessThanOrEqual(10_000);
    // The lanes take submits again, up to their full capacity.
    for (let i = 0; i < 20; i++) expect((await throttle.submit('key0', { i })).admitted).toBe(true);
    await worker.close();
  });
});
