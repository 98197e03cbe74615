// Per-tick write coalescing (src/redis/write-coalescing.ts) on real Redis servers: what one tick sends
// reaches Redis together (one socket read there, one write here), every reply comes back to its own
// command in order, a pipeline and a transaction still work, and a command sent while the connection is
// down waits in the offline queue and runs after the reconnect. On a cluster, every master's connection
// coalesces, including those made after the client was wrapped.
import { Cluster, Redis } from 'ioredis';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coalesceWrites } from '../../src/redis/write-coalescing.js';
import { startCluster, startRedis, type RedisCluster, type RedisServer } from '../helpers/redis-server.js';

/** Socket reads Redis has made so far (INFO stats). */
async function readsOf(inspector: Redis): Promise<number> {
  return Number(/total_reads_processed:(\d+)/.exec(await inspector.info('stats'))![1]);
}

/** Counts the socket-level writes (`_write` for one chunk, `_writev` for several) of `client`'s current socket. */
function countWrites(client: Redis): { writes: number } {
  const socket = (client as unknown as { stream: Socket & { _write: Function; _writev: Function } }).stream;
  const counter = { writes: 0 };
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name];
    socket[name] = function (this: Socket, ...args: unknown[]) {
      counter.writes++;
      return original.apply(this, args);
    };
  }
  return counter;
}

/** 200 commands of several kinds issued in one synchronous run, with the replies each must get. */
function oneTickOfCommands(client: Redis | Cluster, tag: string) {
  const sent: Promise<unknown>[] = [];
  const want: unknown[] = [];
  for (let i = 0; i < 50; i++) {
    const key = `{${tag}${i % 7}}:k${i}`;
    sent.push(client.set(key, `v${i}`), client.get(key), client.incrby(`${key}:n`, i), client.eval('return ARGV[1] .. KEYS[1]', 1, key, `e${i}`));
    want.push('OK', `v${i}`, i, `e${i}${key}`);
  }
  return { sent: Promise.all(sent), want };
}

describe('write coalescing on one node', () => {
  let server: RedisServer;
  let inspector: Redis;
  beforeAll(async () => {
    server = await startRedis();
    inspector = new Redis(server.url);
  });
  afterAll(async () => {
    inspector.disconnect();
    await server.dispose();
  });

  it("sends a tick's commands in one write and Redis reads them together; every reply is its command's", async () => {
    const client = new Redis(server.url);
    coalesceWrites(client);
    await client.ping();
    const writes = countWrites(client);
    const reads0 = await readsOf(inspector);
    const { sent, want } = oneTickOfCommands(client, 'a');
    expect(await sent).toEqual(want);
    // 200 commands, one socket write; Redis needs a read per 16 KB of query buffer at most (these are ~12 KB)
    // and the inspector's own INFO is one more.
    expect(writes.writes).toBe(1);
    expect((await readsOf(inspector)) - reads0).toBeLessThanOrEqual(3);
    client.disconnect();
  });

  it('without it, the same tick is one socket write per command (what coalescing saves)', async () => {
    const client = new Redis(server.url);
    await client.ping();
    const writes = countWrites(client);
    const { sent, want } = oneTickOfCommands(client, 'b');
    expect(await sent).toEqual(want);
    expect(writes.writes).toBeGreaterThan(100);
    client.disconnect();
  });

  it('commands of later ticks go out in their own writes, in order', async () => {
    const client = new Redis(server.url);
    coalesceWrites(client);
    await client.ping();
    const writes = countWrites(client);
    const replies: unknown[] = [];
    for (let i = 0; i < 5; i++) {
      replies.push(await Promise.all([client.rpush('{c}:list', `x${i}`), client.lrange('{c}:list', 0, -1)]));
    }
    expect(replies.map((r) => (r as [number, string[]])[1].at(-1))).toEqual(['x0', 'x1', 'x2', 'x3', 'x4']);
    expect(writes.writes).toBe(5);
    client.disconnect();
  });

  it('pipelines and transactions sent in a coalesced tick keep their replies', async () => {
    const client = new Redis(server.url);
    coalesceWrites(client);
    await client.ping();
    const [piped, multi, plain] = await Promise.all([
      client.pipeline().set('{d}:p', '1').incr('{d}:p').get('{d}:p').exec(),
      client.multi().set('{d}:m', 'a').append('{d}:m', 'b').get('{d}:m').exec(),
      client.get('{d}:p'),
    ]);
    expect(piped).toEqual([[null, 'OK'], [null, 2], [null, '2']]);
    expect(multi).toEqual([[null, 'OK'], [null, 2], [null, 'ab']]);
    expect(plain).toBe('2');
    client.disconnect();
  });

  it('a command sent while the connection is down waits offline and runs after the reconnect', async () => {
    const client = new Redis(server.url, { enableOfflineQueue: true, retryStrategy: () => 20 });
    coalesceWrites(client);
    await client.set('{e}:k', 'before');
    const id = await client.client('ID');
    const closed = new Promise((resolve) => client.once('close', resolve));
    const reconnected = new Promise((resolve) => client.once('ready', resolve));
    await inspector.client('KILL', 'ID', String(id));
    // Sent once the connection is seen closed: queued offline, not written to the dead socket.
    await closed;
    expect(client.status).not.toBe('ready');
    const after = Promise.all([client.set('{e}:k', 'after'), client.get('{e}:k')]);
    await reconnected;
    expect(await after).toEqual(['OK', 'after']);
    client.disconnect();
  });
});

describe('write coalescing on a 3-master cluster', () => {
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startCluster();
  });
  afterAll(async () => {
    await cluster?.dispose();
  });

  it("every master's connection coalesces (made after the wrap too), and each reply is its command's", async () => {
    const client = new Cluster(cluster.nodes);
    coalesceWrites(client);
    // Tags spread over the masters; the node connections are made as the cluster connects (after the wrap).
    const { sent, want } = oneTickOfCommands(client, 'z');
    expect(await sent).toEqual(want);
    const masters = client.nodes('master');
    expect(masters).toHaveLength(3);
    const counters = masters.map((node) => countWrites(node));
    const again = oneTickOfCommands(client, 'y');
    expect(await again.sent).toEqual(again.want);
    // 200 commands over three masters: one write to each master that had any.
    const total = counters.reduce((a, c) => a + c.writes, 0);
    expect(total).toBeGreaterThanOrEqual(1);
    expect(total).toBeLessThanOrEqual(3);
    client.disconnect();
  });
});
