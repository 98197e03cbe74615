// 32 concurrent submitters (2 processes x 16 loops) while Redis is SIGKILLed and restarted empty: no job
// may exist without its lane unit, and no submit told "failed" may have left a job. Issue 8, defect 3.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTsProcess, type ChildHandle } from '../../helpers/processes.js';
import { startRedis, type RedisServer } from '../../helpers/redis-server.js';
import { uniquePrefix } from '../../helpers/fixtures.js';

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.dispose();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('an empty Redis restart under submit load', () => {
  it('leaves no job without its lane unit, and no job behind a failed submit', { timeout: 90_000 }, async () => {
    const prefix = uniquePrefix();
    const name = 'restart';
    const config = { ratePerSecond: 1_000, capacity: 100_000 };
    const children: ChildHandle[] = Array.from({ length: 2 }, () =>
      startTsProcess('helpers/submit-loop.ts', [server.url, prefix, name, JSON.stringify(config), '16']),
    );
    await Promise.all(children.map((c) => c.message('running')));
    const t0 = Date.now();
    await sleep(700);
    await server.kill();
    await server.start(); // empty: nothing persisted
    await sleep(1_500);
    for (const c of children) c.send('stop');
    const reports = await Promise.all(children.map((c) => c.message<{ admitted: string[]; failed: { jobId: string; code: string }[] }>('done')));
    console.log(`children done ${Date.now() - t0} ms after they started submitting`);
    await sleep(300);

    const raw = new Redis(server.port, '127.0.0.1');
    try {
      // Everything in the new server: BullMQ job hashes and lane members.
      const tag = `${prefix}:v1:{t:${name}}`;
      const jobKeys = await raw.keys(`${tag}:bull:${name}:*`);
      const jobIds = new Set<string>();
      for (const k of jobKeys) {
        const id = k.slice(`${tag}:bull:${name}:`.length);
        if (!id.includes(':') && id !== 'meta' && (await raw.type(k)) === 'hash') jobIds.add(id);
      }
      const members = new Set<string>();
      for (const q of await raw.keys(`${tag}:l:*:q`)) for (const m of await raw.zrange(q, '0', '-1')) members.add(m.slice(0, m.lastIndexOf('|')));
      const admitted = new Set(reports.flatMap((r) => r.admitted));
      const failed = reports.flatMap((r) => r.failed);
      console.log(JSON.stringify({ jobs: jobIds.size, members: members.size, admitted: admitted.size, failed: failed.length }));
      expect(admitted.size).toBeGreaterThan(0);
      expect(failed.length).toBeGreaterThan(0); // the restart was felt
      expect(jobIds.size).toBeGreaterThan(0); // submits went on after it
      // Every job has its lane unit (no worker runs: nothing has started), and was answered "admitted".
      expect([...jobIds].filter((id) => !members.has(id))).toEqual([]);
      expect([...jobIds].filter((id) => !admitted.has(id))).toEqual([]);
      // No submit told "failed" left a job or a unit behind.
      expect(failed.filter((f) => jobIds.has(f.jobId) || members.has(f.jobId))).toEqual([]);
    } finally {
      raw.disconnect();
    }
  });
});
