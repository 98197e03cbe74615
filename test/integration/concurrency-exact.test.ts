// Exactness under concurrency: 6 OS processes x 400 concurrent calls on one key, on a single Redis
// node and on a 3-master cluster: the number allowed equals the limit exactly. The same six processes run
// every case of a topology, each case with a fresh sluice (prefix, connection) in each.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAMMER_CASES, HammerPool } from '../helpers/hammer-suite.js';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../helpers/fixtures.js';

describe.each(TOPOLOGIES)('6 processes x 400 concurrent calls on one key (%s)', (topology) => {
  let backend: Backend;
  let pool: HammerPool;
  beforeAll(async () => {
    backend = await startBackend(topology);
    // The processes are started once and run every case (each case: a fresh prefix and connection).
    pool = HammerPool.start(backend.target);
  });
  afterAll(async () => {
    await pool?.close();
    await backend?.dispose();
  });

  for (const c of HAMMER_CASES) {
    it(`${c.name}: allowed === ${c.expected}`, async () => {
      const r = await pool.run(uniquePrefix(), c, 'hot');
      expect(r.failures).toBe(0);
      expect(r.allowed).toBe(c.expected);
      if (c.policy.algorithm === 'concurrency') expect(r.leases).toBe(c.expected);
      // Several processes got a share: the calls really raced each other.
      expect(r.perProcess.filter((n) => n > 0).length).toBeGreaterThan(1);
    });
  }
});
