// e2e: client identity through X-Forwarded-For. Two `sluice serve` processes, one that does not trust
// the test client (127.0.0.1) as a proxy and one that does; a queue keyed by `ip` with room for two
// jobs (and no worker, so lanes only fill) shows which lane each request counted in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { identityHash } from '../../src/http/rule-decisions.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { postJson, startSluice, stopAll, tempDir, type SluiceProcess, type TempDir } from '../helpers/e2e.js';

const rules = (queue: string, trusted: string) => `auth: none
domains:
  - domain: api
    descriptors:
      - key: ip
        rate_limit: { unit: minute, requests_per_unit: 100 }
http:
  domain: api
  trusted_proxies: ${trusted}
  descriptors: [[ip]]
queues:
  - name: ${queue}
    rate_per_second: 0.5
    capacity: 2
    key: ip
    handler: { type: module, path: ./noop.mjs }
`;

let redis: RedisServer;
let dir: TempDir;
let untrusted: SluiceProcess;
let trusted: SluiceProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('identity');
  dir.write('noop.mjs', 'export default async () => null;\n');
  [untrusted, trusted] = await Promise.all([
    // 10.0.0.0/8 is trusted, the test client on 127.0.0.1 is not.
    startSluice('serve', { config: dir.write('untrusted.yaml', rules('by-ip', '[10.0.0.0/8]')), redisUrl: redis.url }),
    startSluice('serve', { config: dir.write('trusted.yaml', rules('via-proxy', '[loopback]')), redisUrl: redis.url }),
  ]);
});

afterAll(async () => {
  await stopAll(untrusted, trusted);
  await redis?.dispose();
  dir?.dispose();
});

async function submit(server: SluiceProcess, queue: string, xff?: string): Promise<number> {
  const res = await postJson(`${server.url}/v1/queues/${queue}/jobs`, { payload: { xff: xff ?? null } }, xff === undefined ? {} : { 'x-forwarded-for': xff });
  await res.arrayBuffer();
  return res.status;
}

/** The identity of the last refusal a server logged (a hash of the lane key). */
async function lastRefusal(server: SluiceProcess, count: number): Promise<unknown> {
  await server.waitForLog(() => server.logs.filter((l) => l.event === 'refused').length >= count, 5000, `refusal #${count}`);
  return server.logs.filter((l) => l.event === 'refused')[count - 1]!.identity;
}

describe('X-Forwarded-For from a peer that is not a trusted proxy', () => {
  it('is ignored: spoofed values share one lane, the socket address', async () => {
    expect(await submit(untrusted, 'by-ip', '1.2.3.4')).toBe(202);
    expect(await submit(untrusted, 'by-ip', '5.6.7.8')).toBe(202);
    // The lane (capacity 2) is full whichever address the client claims, and with no claim at all.
    expect(await submit(untrusted, 'by-ip', '9.9.9.9')).toBe(429);
    expect(await submit(untrusted, 'by-ip', '10.1.2.3, 1.2.3.4')).toBe(429);
    expect(await submit(untrusted, 'by-ip')).toBe(429);
    // Every refusal was counted under 127.0.0.1, none under a claimed address.
    const identities = [await lastRefusal(untrusted, 1), await lastRefusal(untrusted, 2), await lastRefusal(untrusted, 3)];
    expect(identities).toEqual([identityHash('127.0.0.1'), identityHash('127.0.0.1'), identityHash('127.0.0.1')]);
    expect(identities).not.toContain(identityHash('1.2.3.4'));
  });
});

describe('X-Forwarded-For from a trusted proxy', () => {
  it('is honoured: each forwarded client has its own lane', async () => {
    expect(await submit(trusted, 'via-proxy', '1.2.3.4')).toBe(202);
    expect(await submit(trusted, 'via-proxy', '1.2.3.4')).toBe(202);
    expect(await submit(trusted, 'via-proxy', '1.2.3.4')).toBe(429);
    expect(await lastRefusal(trusted, 1)).toBe(identityHash('1.2.3.4'));
    // Another client behind the proxy, and the proxy itself (no header), are not affected.
    expect(await submit(trusted, 'via-proxy', '5.6.7.8')).toBe(202);
    expect(await submit(trusted, 'via-proxy')).toBe(202);
  });

  it('only the rightmost untrusted hop counts: hops the client wrote to its left are ignored', async () => {
    // The client sent "X-Forwarded-For: <anything>" and its proxy (us, trusted) appended 198.51.100.7.
    expect(await submit(trusted, 'via-proxy', '6.6.6.6, 198.51.100.7')).toBe(202);
    expect(await submit(trusted, 'via-proxy', '7.7.7.7, 198.51.100.7')).toBe(202);
    expect(await submit(trusted, 'via-proxy', '8.8.8.8, 198.51.100.7')).toBe(429);
    expect(await lastRefusal(trusted, 2)).toBe(identityHash('198.51.100.7'));
  });

  it('IPv6 clients are grouped by /56 by default: rotating /64s inside one /56 does not escape the lane', async () => {
    // Three different /64s of 2001:db8:1:200::/56: one lane of capacity 2.
    expect(await submit(trusted, 'via-proxy', '2001:db8:1:200::1')).toBe(202);
    expect(await submit(trusted, 'via-proxy', '2001:db8:1:2ff:ffff:ffff:ffff:ffff')).toBe(202);
    expect(await submit(trusted, 'via-proxy', '2001:db8:1:2ab::abcd')).toBe(429);
    expect(await lastRefusal(trusted, 3)).toBe(identityHash('2001:db8:1:200::/56'));
    // The next /56 is another client.
    expect(await submit(trusted, 'via-proxy', '2001:db8:1:300::1')).toBe(202);
  });
});
