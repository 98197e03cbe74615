// A worker with collectAtStart runs its process's start-up collections once it is connected
// (src/throttle/startup-collection.ts): once per process, whatever the number of workers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice, type Sluice } from '../../../src/index.js';
import { collectStartupGarbage } from '../../../src/throttle/startup-collection.js';
import { startRedis, type RedisServer } from '../../helpers/redis-server.js';
import { uniquePrefix } from '../../helpers/fixtures.js';

let server: RedisServer;
let sluice: Sluice;

beforeAll(async () => {
  server = await startRedis();
  sluice = createSluice({ redis: server.url, prefix: uniquePrefix() });
});
afterAll(async () => {
  await sluice?.close();
  await server?.dispose();
});

describe('collectAtStart', () => {
  it("runs the collections when the worker is ready, once per process; a worker without it runs none", async () => {
    for (const name of ['sc-plain', 'sc-first', 'sc-second']) sluice.throttle(name, { ratePerSecond: 10, capacity: 10 });
    const plain = sluice.worker('sc-plain', async () => 'ok');
    await plain.waitUntilReady();
    expect(plain.startupCollectionMs).toBeUndefined();

    const first = sluice.worker('sc-first', async () => 'ok', { collectAtStart: true });
    await first.waitUntilReady();
    expect(first.startupCollectionMs).toBeGreaterThan(0);

    const second = sluice.worker('sc-second', async () => 'ok', { collectAtStart: true });
    await second.waitUntilReady();
    expect(second.startupCollectionMs).toBeUndefined(); // this process collected already
    expect(collectStartupGarbage()).toBeUndefined();
    await Promise.all([plain.close(), first.close(), second.close()]);
  });
});
