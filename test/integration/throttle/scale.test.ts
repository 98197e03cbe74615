// Property 7: the number of BullMQ queues, workers and Redis connections does not depend on the number
// of keys, and idle lanes expire: after thousands of distinct keys were submitted once each and their
// jobs ran, Redis holds no lane at all. (bench/throttle-scale.ts does the same with 1,000,000 keys.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sluice } from '../../../src/index.js';
import { startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

let backend: Backend;
beforeAll(async () => {
  backend = await startBackend('single');
});
afterAll(async () => {
  await backend?.dispose();
});

async function keysUnder(prefix: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await backend.raw.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  return found;
}

async function connections(): Promise<number> {
  return String(await backend.raw.client('LIST')).trim().split('\n').length;
}

describe('scale', () => {
  it('3,000 distinct keys: same connections as 10 keys, and no lane left once the jobs ran', async () => {
    const prefix = uniquePrefix();
    const sluice: Sluice = backend.sluice({ prefix });
    const throttle = sluice.throttle('scale', { ratePerSecond: 10, capacity: 5, keepCompleted: { count: 0 } });
    let done = 0;
    const worker = sluice.worker('scale', () => void done++, { concurrency: 50 });
    await worker.waitUntilReady();

    for (let i = 0; i < 10; i++) await throttle.submit(`warm-${i}`, {});
    await until(() => done === 10, 10_000, 'the first 10');
    const connectionsAt10 = await connections();

    const N = 3_000;
    for (let i = 0; i < N; i += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, j) => throttle.submit(`tenant-${i + j}`, { i: i + j })));
    }
    expect(await connections()).toBe(connectionsAt10);
    await until(() => done === N + 10, 60_000, 'all jobs to run');
    expect(await connections()).toBe(connectionsAt10);

    // Lanes of keys that went idle expire about a second after their last slot.
    // (30 s: on a loaded machine the last handed-out jobs can start late and go round once more.)
    const lanesLeft = async () => (await keysUnder(prefix)).filter((k) => k.includes('}:l:'));
    await until(async () => (await lanesLeft()).length === 0, 30_000, 'lanes to expire').catch(async (error: unknown) => {
      const left = await lanesLeft();
      const ttls = await Promise.all(left.slice(0, 5).map((k) => backend.raw.pttl(k)));
      throw new Error(`${(error as Error).message}: ${left.length} left, e.g. ${JSON.stringify(left.slice(0, 5))} with PTTL ${JSON.stringify(ttls)}`);
    });
    const left = await keysUnder(prefix);
    // What is left is the throttle's own fixed set (configuration, busy set, BullMQ's queue keys): a
    // handful, whatever the number of keys was.
    expect(left.length).toBeLessThan(15);
    expect(await backend.raw.zcard(throttle.keys.busy)).toBe(0);
    await worker.close();
  });
});
