// Redis instructions per job handed out by the dispatcher (lua/throttle-dispatch.lua): `--keys` lanes with
// `--per-key` jobs each are submitted, then dispatch rounds are called directly (no worker; `now` injected,
// 50 ms apart, 256 jobs at most per round, as a worker's dispatch loop asks) until every job is handed out,
// on one redis-server run under valgrind's callgrind. The instructions of the dispatch phase are read with
// `callgrind_control -e Ir` before and after it: a count the machine's load does not move (repeat runs
// agree within ~1 %), so a before/after compares what a round asks of Redis per job. `--cap` adds a global
// cap (per second). `--base DIR`: the same with another checkout's src/ (and its lua/), in the same run.
//   npx tsx bench/throttle-dispatch-instructions.ts [--keys 1000] [--per-key 1] [--cap 0] [--base DIR]
// Needs valgrind; ~10 s per tree. Prints one JSON document on stdout.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { startCallgrindRedis } from './lib/callgrind-redis.js';

const { values: flags } = parseArgs({
  options: {
    keys: { type: 'string', default: '1000' },
    'per-key': { type: 'string', default: '1' },
    cap: { type: 'string', default: '0' },
    base: { type: 'string' },
  },
});
const keys = Number(flags.keys);
const perKey = Number(flags['per-key']);
const cap = Number(flags.cap);
if (!(keys >= 1 && keys <= 100_000 && perKey >= 1 && keys * perKey <= 100_000)) throw new Error('--keys x --per-key: 1 .. 100000');

type CreateSluice = typeof import('../src/index.js').createSluice;

/** Instructions per job handed out, for the sluice of `src` (a module exporting createSluice). */
async function measure(src: string): Promise<{ jobs: number; rounds: number; instructionsPerJob: number }> {
  const { createSluice } = (await import(src)) as { createSluice: CreateSluice };
  const server = await startCallgrindRedis();
  const probe = server.client;
  const instructions = server.instructions;
  const sluice = createSluice({ redis: server.url, prefix: 'di' });
  try {
    const throttle = sluice.throttle('di', { ratePerSecond: 1000, capacity: Math.max(100, perKey), keepCompleted: { count: 0 }, submitTimeoutMs: 60_000, ...(cap > 0 ? { globalRatePerSecond: cap } : {}) });
    await throttle.ready();
    for (let j = 0; j < perKey; j++) {
      for (let k = 0; k < keys; k += 64) await Promise.all(Array.from({ length: Math.min(64, keys - k) }, (_, i) => throttle.submit(`k${k + i}`, { j })));
    }
    const total = keys * perKey;
    const lanes = (throttle as unknown as { gateLanes: { dispatch(max: number, now: string): Promise<{ jobs: unknown[] }> } }).gateLanes;
    const [s, us] = await probe.time();
    let now = Number(s) * 1e6 + Number(us) + 1_000_000;
    // One round first: the script loaded and compiled, not counted.
    let jobs = (await lanes.dispatch(1, String(now))).jobs.length;
    let rounds = 0;
    const before = instructions();
    let counted = 0;
    while (jobs + counted < total && rounds < 100_000) {
      now += 50_000;
      counted += (await lanes.dispatch(256, String(now))).jobs.length;
      rounds++;
    }
    const used = instructions() - before;
    jobs += counted;
    if (jobs !== total) throw new Error(`handed out ${jobs} of ${total}`);
    return { jobs: counted, rounds, instructionsPerJob: Math.round(used / counted) };
  } finally {
    await sluice.close();
    await server.dispose();
  }
}

const here = await measure('../src/index.js');
const base = flags.base ? await measure(pathToFileURL(join(flags.base, 'src', 'index.ts')).href) : undefined;
console.log(
  JSON.stringify(
    { bench: 'throttle-dispatch-instructions', at: new Date().toISOString(), keys, perKey, cap, here, ...(base ? { base: { dir: flags.base, ...base }, ratio: Math.round((here.instructionsPerJob / base.instructionsPerJob) * 1000) / 1000 } : {}) },
    null,
    1,
  ),
);
