// A fresh cluster client makes each master's connection on first use, and while one is being made a
// client with no offline queue refuses every further command routed to that master ("Connection is
// closed.", nothing sent). The first submits of a throttle raced their own admission client this way:
// BullMQ's INFO to a random master started its connection, the configuration SET to the same master
// was refused, and every submit waiting on it failed. whenReady() now waits for connections being made.
import { Redis, type Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice, type Sluice } from '../../../src/index.js';
import { createRedisClient, whenReady } from '../../../src/redis/connection.js';
import { startCluster, type RedisCluster } from '../../helpers/redis-server.js';
import { uniquePrefix } from '../../helpers/fixtures.js';

let cluster: RedisCluster;
const made: Sluice[] = [];

beforeAll(async () => {
  cluster = await startCluster();
});
afterAll(async () => {
  await Promise.all(made.map((s) => s.close().catch(() => undefined)));
  await cluster?.dispose();
});

/** A key whose slot the master on `port` serves. */
async function keyServedBy(port: number): Promise<string> {
  const probe = new Redis(cluster.nodes[0]!.port, '127.0.0.1');
  try {
    const slots = (await probe.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    for (let i = 0; ; i++) {
      const slot = Number(await probe.call('CLUSTER', 'KEYSLOT', `cold${i}`));
      if (slots.find(([from, to]) => slot >= from && slot <= to)![2][1] === port) return `cold${i}`;
    }
  } finally {
    probe.disconnect();
  }
}

describe('a fresh cluster client', () => {
  it('whenReady() waits for a master connection being made, so the next command to that master is sent', async () => {
    const client = createRedisClient({ cluster: cluster.nodes }).client as Cluster;
    try {
      await new Promise((resolve) => client.once('ready', resolve));
      // The client knows the slots; the masters it has not used yet have no connection.
      const cold = client.nodes('master').find((n) => n.status === 'wait')!;
      const key = await keyServedBy(cold.options.port!);
      cold.connect().catch(() => undefined); // as BullMQ's INFO to a random master does
      await expect(client.set(key, '1')).rejects.toThrow('Connection is closed.');
      expect(['connecting', 'connect']).toContain(cold.status);

      await whenReady(client, 2_000);
      expect(cold.status).toBe('ready');
      expect(await client.set(key, '2')).toBe('OK');
    } finally {
      client.disconnect();
    }
  });

  it('the first submits of fresh processes are all admitted (8 sluice instances x 10 submits at once)', async () => {
    for (let i = 0; i < 8; i++) {
      const sluice = createSluice({ redis: { cluster: cluster.nodes }, prefix: uniquePrefix() });
      made.push(sluice);
      await sluice.ready(); // what serve and worker do before taking traffic
      const throttle = sluice.throttle('cold', { ratePerSecond: 10, capacity: 20 });
      const results = await Promise.allSettled(Array.from({ length: 10 }, (_, j) => throttle.submit('k', { j })));
      const failures = results.flatMap((r) => (r.status === 'rejected' ? [(r.reason as Error).message] : []));
      expect(failures).toEqual([]);
      expect(results.filter((r) => r.status === 'fulfilled' && r.value.admitted)).toHaveLength(10);
      await sluice.close();
    }
  });
});
