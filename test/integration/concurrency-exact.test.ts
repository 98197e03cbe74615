// Exactness under concurrency: 6 OS processes x 400 concurrent calls on one key, on a single Redis
// node and on a 3-master cluster: the number allowed equals the limit exactly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HAMMER_CASES, hammer } from '../helpers/hammer-suite.js';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../helpers/fixtures.js';

describe.each(TOPOLOGIES)('6 processes x 400 concurrent calls on one key (%s)', (topology) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await startBackend(topology);
  });
  afterAll(async () => {
    await backend?.dispose();
  });

  for (const c of HAMMER_CASES) {
    it(`${c.name}: allowed === ${c.expected}`, async () => {
      const r = await hammer(backend.target, uniquePrefix(), c, 'hot');
      expect(r.failures).toBe(0);
      expect(r.allowed).toBe(c.expected);
      if (c.policy.algorithm === 'concurrency') expect(r.leases).toBe(c.expected);
      // Several processes got a share: the calls really raced each other.
      expect(r.perProcess.filter((n) => n > 0).length).toBeGreaterThan(1);
    });
  }
});
