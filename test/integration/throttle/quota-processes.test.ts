// Spend quotas are exact across processes: three OS processes submit concurrently into ten keys and
// run workers; a queue quota of 25 calls per day and a key quota of 4 per key start exactly 25 jobs
// (the rest wait for the next day: deferring quotas), no key more than 4, on a single node and on a
// 3-master cluster. The quotas' day is one where the test runs around noon (an Etc/GMT zone), so no
// midnight falls inside the run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../../helpers/fixtures.js';
import { ThrottleProc } from '../../helpers/throttle-procs.js';

const QUEUE_LIMIT = 25;
const KEY_LIMIT = 4;
const KEYS = 10;
const PER_KEY = 6;

/** An Etc/GMT zone whose local time is near noon now (Etc/GMT-3 is UTC+3). */
function noonZone(): string {
  const offset = ((12 - new Date().getUTCHours() + 36) % 24) - 12; // -12..11
  const clamped = Math.max(-12, Math.min(12, offset));
  return clamped === 0 ? 'Etc/GMT' : `Etc/GMT${clamped > 0 ? '-' : '+'}${Math.abs(clamped)}`;
}

describe.each(TOPOLOGIES)('spend quotas across processes (%s)', (topology) => {
  let backend: Backend;
  let procs: ThrottleProc[] = [];
  beforeAll(async () => {
    backend = await startBackend(topology);
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.close()));
    await backend?.dispose();
  });

  it(`3 processes, ${KEYS} keys x ${PER_KEY} jobs: exactly ${QUEUE_LIMIT} start, no key over ${KEY_LIMIT}`, async () => {
    const timeZone = noonZone();
    const config = {
      ratePerSecond: 50,
      capacity: 100,
      quotas: [
        { scope: 'queue' as const, period: 'day' as const, limit: QUEUE_LIMIT, whenExhausted: 'defer' as const, timeZone },
        { scope: 'key' as const, period: 'day' as const, limit: KEY_LIMIT, whenExhausted: 'defer' as const, timeZone },
      ],
    };
    const prefix = uniquePrefix();
    procs = await Promise.all([0, 1, 2].map(() => ThrottleProc.start(backend, prefix, 'quota', config)));
    await Promise.all(procs.map((p) => p.worker(10)));
    const items = Array.from({ length: KEYS * PER_KEY }, (_, i) => ({ key: `k${i % KEYS}`, payload: { i } }));
    const replies = (await Promise.all(procs.map((p, n) => p.submit(items.filter((_, i) => i % 3 === n))))).flat();
    expect(replies.every((r) => r.admitted)).toBe(true);
    // Until the starts stop: 25 at 50/s per key take well under a second; then a second of nothing.
    const started = () => procs.reduce((n, p) => n + p.starts.length, 0);
    const deadline = Date.now() + 20_000;
    let last = -1;
    let stableSince = Date.now();
    while (Date.now() < deadline) {
      const now = started();
      if (now !== last) {
        last = now;
        stableSince = Date.now();
      } else if (now >= QUEUE_LIMIT && Date.now() - stableSince > 1_500) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const starts = procs.flatMap((p) => p.starts);
    expect(starts.length).toBe(QUEUE_LIMIT);
    const perKey = new Map<string, number>();
    for (const s of starts) perKey.set(s.lane, (perKey.get(s.lane) ?? 0) + 1);
    expect(Math.max(...perKey.values())).toBeLessThanOrEqual(KEY_LIMIT);
    // Each started once, and what Redis counted is what ran.
    expect(new Set(starts.map((s) => s.id)).size).toBe(QUEUE_LIMIT);
    const throttle = backend.sluice({ prefix }).throttle('quota', config);
    expect((await throttle.quotaUse(undefined)).map((u) => u.used)).toEqual([QUEUE_LIMIT]);
    let keyTotal = 0;
    for (let k = 0; k < KEYS; k++) keyTotal += (await throttle.quotaUse(`k${k}`))[1]!.used;
    expect(keyTotal).toBe(QUEUE_LIMIT);
  });
});
