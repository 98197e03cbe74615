// What spend quotas cost Redis: the same admissions and dispatch rounds on throttles without quotas,
// with one key quota, and with a key and a queue quota (day and month), on a private redis-server.
// Redis CPU per operation from INFO commandstats (µs per EVALSHA/EVAL call of each phase, after a
// RESETSTAT), which other work on the machine moves far less than wall-clock rates.
//   npx tsx bench/quota-cost.ts [--jobs 20000] [--lanes 200]
// Prints one JSON document on stdout.
import os from 'node:os';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createSluice, type QuotaInput } from '../src/index.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({ options: { jobs: { type: 'string', default: '20000' }, lanes: { type: 'string', default: '200' } } });
const JOBS = Number(flags.jobs);
const LANES = Number(flags.lanes);

/** µs of Redis CPU per script call since the last RESETSTAT, over every script command. */
async function scriptUsPerCall(raw: Redis): Promise<{ calls: number; usPerCall: number }> {
  const info = await raw.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const line of info.split('\n')) {
    const m = /^cmdstat_(fcall|fcall_ro|evalsha|eval|evalsha_ro|eval_ro):calls=(\d+),usec=(\d+)/.exec(line.trim());
    if (m) {
      calls += Number(m[2]);
      usec += Number(m[3]);
    }
  }
  return { calls, usPerCall: calls ? Math.round((usec / calls) * 100) / 100 : 0 };
}

const variants: Record<string, QuotaInput[] | undefined> = {
  none: undefined,
  'key quota': [{ scope: 'key', period: 'day', limit: 1_000_000, whenExhausted: 'defer' }],
  'key + queue quotas': [
    { scope: 'key', period: 'day', limit: 1_000_000, whenExhausted: 'defer', timeZone: 'Europe/Berlin' },
    { scope: 'queue', period: 'month', limit: 1_000_000_000, whenExhausted: 'defer' },
  ],
};

const server = await startRedis();
const raw = new Redis(server.url);
const sluice = createSluice({ redis: server.url });
const out: Record<string, unknown> = {};
try {
  const load = os.loadavg()[0];
  for (const [name, quotas] of Object.entries(variants)) {
    const throttle = sluice.throttle(`qc${Object.keys(out).length}`, { ratePerSecond: 100_000, capacity: 1_000_000, ...(quotas ? { quotas } : {}) });
    const lanes = throttle.gateLanes;
    // In-process ids ('p…'): the dispatcher does not look for a BullMQ job; only the lane scripts run.
    await raw.call('CONFIG', 'RESETSTAT');
    const t0 = performance.now();
    for (let i = 0; i < JOBS; i += 64) {
      await Promise.all(Array.from({ length: Math.min(64, JOBS - i) }, (_, j) => lanes.admit(`k${(i + j) % LANES}`, `p${i + j}`, 1, false, '')));
    }
    const admitMs = performance.now() - t0;
    const admit = await scriptUsPerCall(raw);
    await raw.call('CONFIG', 'RESETSTAT');
    let dispatched = 0;
    let rounds = 0;
    while (dispatched < JOBS && rounds < 100_000) {
      dispatched += (await lanes.dispatch(500)).jobs.length;
      rounds++;
    }
    const dispatch = await scriptUsPerCall(raw);
    out[name] = {
      admissions: JOBS,
      admitUsPerCall: admit.usPerCall,
      admitWallPerSec: Math.round(JOBS / (admitMs / 1000)),
      dispatched,
      dispatchRounds: rounds,
      dispatchUsPerJob: Math.round(((dispatch.usPerCall * dispatch.calls) / Math.max(1, dispatched)) * 100) / 100,
    };
    console.error(name, JSON.stringify(out[name]));
  }
  const none = out.none as { admitUsPerCall: number; dispatchUsPerJob: number };
  const both = out['key + queue quotas'] as { admitUsPerCall: number; dispatchUsPerJob: number };
  console.log(
    JSON.stringify(
      {
        bench: 'quota-cost',
        at: new Date().toISOString(),
        jobs: JOBS,
        lanes: LANES,
        loadAverage: [load, os.loadavg()[0]],
        variants: out,
        addedByTwoQuotas: { admitUs: Math.round((both.admitUsPerCall - none.admitUsPerCall) * 100) / 100, dispatchUsPerJob: Math.round((both.dispatchUsPerJob - none.dispatchUsPerJob) * 100) / 100 },
      },
      null,
      2,
    ),
  );
} finally {
  await sluice.close();
  raw.disconnect();
  await server.dispose();
}
