// Scripts are in Redis before their first call: a worker loads the gate's and the dispatcher's scripts
// while it starts, `throttle.ready()` the admission script (both forms), on every master of a cluster,
// as function libraries (FCALL from the first call on). Without that, a worker's first start call met
// NOSCRIPT, sent the whole source as an EVAL and came back late for the instant it asked for
// (bench/global-cap.ts traces: ~9 ms against 2-3 ms).
import { Cluster, type Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { loadScripts } from '../../../src/redis/script-forms.js';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

const fnOf = (name: string) => loadScripts().get(name)!.fn;

/** Whether each of `names`' function library is on each master: one array of 0/1 per master. */
async function existsOnMasters(raw: Redis | Cluster, names: string[]): Promise<number[][]> {
  const nodes = raw instanceof Cluster ? raw.nodes('master') : [raw];
  return Promise.all(
    nodes.map((node) => Promise.all(names.map(async (name) => ((await node.call('FUNCTION', 'LIST', 'LIBRARYNAME', fnOf(name))) as unknown[]).length))),
  );
}

/** FUNCTION LOAD calls every master has run so far (INFO commandstats). */
async function scriptCommands(raw: Redis | Cluster): Promise<number> {
  const nodes = raw instanceof Cluster ? raw.nodes('master') : [raw];
  const counts = await Promise.all(nodes.map(async (node) => Number(/cmdstat_function\|load:calls=(\d+)/.exec(await node.info('commandstats'))?.[1] ?? 0)));
  return counts.reduce((a, b) => a + b, 0);
}

describe.each(TOPOLOGIES)('scripts loaded before their first call, %s Redis', (topology) => {
  const ctx = useBackend(topology);

  it("a worker loads the gate's and the dispatcher's scripts before it takes a job", async () => {
    const names = ['throttle-start', 'throttle-dispatch'];
    const masters = topology === 'cluster' ? 3 : 1;
    // A fresh server: nothing has called them yet (the check can fail).
    expect(await existsOnMasters(ctx.backend.raw, names)).toEqual(Array(masters).fill([0, 0]));
    ctx.sluice.throttle('preload', { ratePerSecond: 10, capacity: 10 });
    const worker = ctx.sluice.worker('preload', () => undefined, { concurrency: 1 });
    await worker.waitUntilReady();
    expect(await existsOnMasters(ctx.backend.raw, names)).toEqual(Array(masters).fill([1, 1]));
    await worker.close();
  });

  it('throttle.ready() loads the admission script, alone and batched', async () => {
    const names = ['throttle-admit', 'batch:throttle-admit'];
    const masters = topology === 'cluster' ? 3 : 1;
    expect(await existsOnMasters(ctx.backend.raw, names)).toEqual(Array(masters).fill([0, 0]));
    await ctx.sluice.throttle('preload-admit', { ratePerSecond: 10, capacity: 10 }).ready();
    expect(await existsOnMasters(ctx.backend.raw, names)).toEqual(Array(masters).fill([1, 1]));
    // Once per process: another throttle's ready() loads nothing again.
    const before = await scriptCommands(ctx.backend.raw);
    expect(before).toBeGreaterThan(0);
    await ctx.sluice.throttle('preload-admit-2', { ratePerSecond: 10, capacity: 10 }).ready();
    expect(await scriptCommands(ctx.backend.raw)).toBe(before);
  });
});
