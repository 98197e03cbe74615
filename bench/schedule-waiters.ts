// What schedule() calls waiting in one process cost while they wait: N calls over 500 keys on a throttle
// of 20/s per key under a 200/s cap (a backlog of N / 200 s), from one process with its own dispatcher;
// after a second, 5 s measured: starts per second, this process's CPU (fraction of a core), and Redis µs
// per second in the dispatched set's lookups (ZMSCORE, ZRANGEBYSCORE) and in sluice's scripts (FCALL).
// A private redis-server, started and stopped here.
//   npx tsx bench/schedule-waiters.ts [--waiters 5000,20000] [--seconds 5]
// Prints one JSON document on stdout.
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createSluice } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({ options: { waiters: { type: 'string', default: '5000,20000' }, seconds: { type: 'string', default: '5' } } });
const counts = flags.waiters.split(',').map(Number);
const seconds = Number(flags.seconds);

async function run(n: number) {
  const server = await startRedis();
  const sluice = createSluice({ redis: server.url, prefix: 'sw' });
  const raw = new Redis(server.url);
  try {
    const throttle = sluice.throttle('s', { ratePerSecond: 20, capacity: 100_000, globalRatePerSecond: 200 });
    await throttle.ready();
    let started = 0;
    const calls = Array.from({ length: n }, (_, i) =>
      throttle
        .schedule(`k${i % 500}`, () => {
          started++;
        })
        .catch(() => undefined),
    );
    await new Promise((r) => setTimeout(r, 1000));
    await raw.config('RESETSTAT');
    const cpu0 = process.cpuUsage();
    const started0 = started;
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const cpu = process.cpuUsage(cpu0);
    const s = (performance.now() - t0) / 1000;
    const info = await raw.info('commandstats');
    const usPerSecond = (name: string) => Math.round(Number(new RegExp(`^cmdstat_${name}:calls=\\d+,usec=(\\d+)`, 'm').exec(info)?.[1] ?? 0) / s);
    const row = {
      waiters: n,
      startsPerSecond: Math.round(((started - started0) / s) * 10) / 10,
      processCpu: Math.round(((cpu.user + cpu.system) / 1e6 / s) * 1000) / 1000,
      redisUsPerSecond: { zmscore: usPerSecond('zmscore'), zrangebyscore: usPerSecond('zrangebyscore'), fcall: usPerSecond('fcall') },
    };
    void calls;
    return row;
  } finally {
    raw.disconnect();
    await sluice.close().catch(() => undefined);
    await server.dispose();
  }
}

const rows = [];
for (const n of counts) rows.push(await run(n));
process.stdout.write(`${JSON.stringify({ bench: 'schedule-waiters', at: new Date().toISOString(), seconds, rows }, null, 2)}\n`);
process.exit(0);
