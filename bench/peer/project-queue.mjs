// peer-bench adapter (kind 'throttler') for sluice's queue-backed leaky-bucket throttle. Install it into
// a copy of peer-bench as adapters/project-queue.mjs (see bench/peer/README.md, "Throttler"). It imports
// sluice's BUILT output: run `npx tsc -p tsconfig.build.json` in the sluice checkout first.
// SLUICE_DIST overrides where that output is (default /work/main/dist/src/index.js).
//
// Mapping of the harness's options (one harness id = one throttle = one key, i.e. one lane):
//   rate {max, durationMs} -> ratePerSecond = max * 1000 / durationMs for the lane
//   minTimeMs              -> ratePerSecond = 1000 / minTimeMs
//   neither (throughput and latency scenarios, "no limit") -> ratePerSecond 100,000 (the schema's maximum:
//                             10 µs between starts, far above what one process can start)
//   capacity 10,000,000 (the schema's maximum): the harness's backlogs are never refused
//   concurrency            -> worker concurrency (handlers at once); holdCapacity (jobs held for their
//                             slot) stays at its default of 100
//   extra (--adapter-opts, outflow scenario) -> { config: {...throttle config}, worker: {...worker options} }
// Producers and consumers may be different processes: a job lives in Redis (BullMQ) until a worker
// anywhere starts it at its slot.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';

const dist = process.env.SLUICE_DIST ?? '/work/main/dist/src/index.js';
const { createSluice } = await import(dist);

export const kind = 'throttler';
export const name = 'sluice';
export const version = JSON.parse(readFileSync(new URL('../../package.json', new URL(dist, 'file:///')), 'utf8')).version;
export const semantics =
  'per-key bounded lane (hash + sorted set) on one BullMQ queue; admission = 1 EVALSHA + BullMQ add of a job ' +
  'delayed to its slot; outflow gate = 1 EVALSHA when the job starts (GCRA-spaced slots, 1% pacing margin); ' +
  'admitBulk = admit() for each payload, all in flight at once';
export const capabilities = { remoteConsumers: true, backlog: true, bulk: true, rate: true, minTime: true };

const UNLIMITED_RATE = 100_000;
const LANE = 'lane';

/** @param {import('./interface.mjs').ThrottlerOptions} o */
export async function create(o) {
  const prefix = o.prefix || 'bench-sluice';
  const ratePerSecond = o.rate
    ? (o.rate.max * 1000) / o.rate.durationMs
    : o.minTimeMs
      ? 1000 / o.minTimeMs
      : UNLIMITED_RATE;
  const config = {
    ratePerSecond: Math.min(UNLIMITED_RATE, ratePerSecond),
    capacity: 10_000_000,
    keepCompleted: { count: 0 },
    keepFailed: { count: 0 },
    // A loaded 2-core bench machine: measure the throttle, not the production 2 s deadline.
    submitTimeoutMs: 30_000,
    ...(o.extra?.config ?? {}),
  };
  const sluice = createSluice({ redis: `redis://${o.redis.host || '127.0.0.1'}:${o.redis.port}`, prefix });
  // The hot-path client has no offline queue: reset() may be the very first call.
  if (sluice.redis.status !== 'ready') await once(sluice.redis, 'ready');
  const throttle = sluice.throttle(o.id, config);
  let worker = null;

  async function admit(payload) {
    const r = await throttle.submit(LANE, payload);
    if (!r.admitted) throw new Error(`sluice refused a job: ${r.reason}, retry in ${r.retryAfterMs} ms`);
  }

  return {
    // Every key of this throttle (lanes, global meter, configuration and its BullMQ queue) shares one hash tag.
    keyPattern: `${throttle.keys.tag}:*`,
    admit,
    async admitBulk(payloads) {
      await Promise.all(payloads.map(admit));
    },
    /** Starts consuming: handler(payload) runs when the gate lets a job start. */
    async drain(handler) {
      worker = sluice.worker(o.id, async (job) => { await handler(job.data); }, {
        config,
        concurrency: o.concurrency || 1,
        ...(o.extra?.worker ?? {}),
      });
      await worker.waitUntilReady();
    },
    async reset() {
      let cursor = '0';
      do {
        const [next, keys] = await sluice.redis.scan(cursor, 'MATCH', `${throttle.keys.tag}:*`, 'COUNT', 5000);
        cursor = next;
        if (keys.length) await sluice.redis.unlink(...keys);
      } while (cursor !== '0');
    },
    async close() {
      await sluice.close();
    },
    raw: () => ({ sluice, throttle, worker }),
  };
}
