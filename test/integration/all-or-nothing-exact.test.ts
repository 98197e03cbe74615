// All-or-nothing under contention, across OS processes: two kinds of request race, X needing limits
// A and B, Y needing B and C (B shared). Each request is one `limits` script call, so afterwards every
// limit's count in Redis equals exactly the requests allowed that needed it: no limit exceeded, no
// request partly charged (a peek-then-charge race would leave A or C charged for requests B refused).
// On a cluster with the keys in different slots the peek-then-charge path is taken: no limit exceeded,
// and partial charges are possible there (docs/http-api.md, All-or-nothing).
import calculateSlot from 'cluster-key-slot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPOLOGIES, startBackend, uniquePrefix, type Backend } from '../helpers/fixtures.js';
import { startTsProcess } from '../helpers/processes.js';
import type { PolicyInput } from '../../src/index.js';

const NOW = 5_000;
const A: PolicyInput = { algorithm: 'fixed-window', limit: 300, windowMs: 60_000, name: 'aon-a' };
const B: PolicyInput = { algorithm: 'sliding-log', limit: 500, windowMs: 60_000, name: 'aon-b' };
const C: PolicyInput = { algorithm: 'token-bucket', capacity: 400, refillPerSecond: 1, name: 'aon-c' };

describe.each(TOPOLOGIES)('6 processes x 300 concurrent two-limit requests (%s)', (topology) => {
  let backend: Backend;
  beforeAll(async () => {
    backend = await startBackend(topology);
  });
  afterAll(async () => {
    await backend?.dispose();
  });

  /** 3 X processes (A + B) and 3 Y processes (B + C), 300 concurrent requests each; the totals and the counts left in Redis. */
  async function race(slot: string | undefined) {
    const prefix = uniquePrefix();
    const limit = (policy: PolicyInput) => ({ policy, key: 'client-7', ...(slot ? { slot } : {}) });
    const kinds = { x: [limit(A), limit(B)], y: [limit(B), limit(C)] };
    const kids = (['x', 'x', 'x', 'y', 'y', 'y'] as const).map((kind) => ({
      kind,
      handle: startTsProcess('helpers/hammer-all.ts', [JSON.stringify(backend.target), prefix, JSON.stringify(kinds[kind]), '300', String(NOW)]),
    }));
    await Promise.all(kids.map((k) => k.handle.message('ready')));
    for (const k of kids) k.handle.send('go');
    const results = await Promise.all(kids.map(async (k) => ({ kind: k.kind, ...(await k.handle.message<{ allowed: number; failures: number; refusedWithoutReason: number }>('done')) })));
    await Promise.all(kids.map((k) => k.handle.exited));
    expect(results.every((r) => r.failures === 0 && r.refusedWithoutReason === 0)).toBe(true);
    const allowedX = results.filter((r) => r.kind === 'x').reduce((a, r) => a + r.allowed, 0);
    const allowedY = results.filter((r) => r.kind === 'y').reduce((a, r) => a + r.allowed, 0);
    // The counts in Redis, read at the same instant: what each limit would still give.
    const sluice = backend.sluice({ prefix });
    const options = { nowMs: NOW, ...(slot ? { slot } : {}) };
    const used = async (policy: PolicyInput, capacity: number) => capacity - (await sluice.limiter(policy).peek('client-7', options)).remaining;
    const [usedA, usedB, usedC] = await Promise.all([used(A, 300), used(B, 500), used(C, 400)]);
    const zcardB = await backend.raw.zcard(sluice.limiter(B).keyOf('client-7', options));
    return { allowedX, allowedY, usedA, usedB, usedC, zcardB };
  }

  it('one slot (one script call): every limit counts exactly the allowed requests that needed it; the shared one ends full', async () => {
    // One slot for the three keys (on a cluster, what the rules' slot_key does for one client's rules).
    const r = await race('client-7');
    // The requests really raced: both kinds got some.
    expect(r.allowedX).toBeGreaterThan(0);
    expect(r.allowedY).toBeGreaterThan(0);
    expect(r.usedA).toBe(r.allowedX);
    expect(r.usedC).toBe(r.allowedY);
    expect(r.usedB).toBe(r.allowedX + r.allowedY);
    // B's log holds one member per allowed request, exactly (read raw, not through a script).
    expect(r.zcardB).toBe(r.allowedX + r.allowedY);
    // A request is refused only when a limit is full: demand (900 + 900) exceeds A + C > B, so B is full.
    expect(r.allowedX + r.allowedY).toBe(500);
  });

  it.runIf(topology === 'cluster')('keys in different slots (peek then charge): no limit ever exceeded, partial charges possible', async () => {
    const keyOf = (p: PolicyInput) => backend.sluice().limiter(p).keyOf('client-7');
    // The three keys really are in three slots (each hash-tagged by its own limiter), so no script can take them together.
    expect(new Set([A, B, C].map((p) => calculateSlot(keyOf(p)))).size).toBe(3);
    const r = await race(undefined);
    expect(r.usedA).toBeLessThanOrEqual(300);
    expect(r.usedB).toBeLessThanOrEqual(500);
    expect(r.usedC).toBeLessThanOrEqual(400);
    expect(r.zcardB).toBe(r.usedB);
    // Every allowed request was charged on both its limits; a request refused at a charge may have left
    // the limit charged before it charged (the documented cost of this path), never the other way.
    expect(r.usedA).toBeGreaterThanOrEqual(r.allowedX);
    expect(r.usedC).toBeGreaterThanOrEqual(r.allowedY);
    expect(r.usedB).toBeGreaterThanOrEqual(r.allowedX + r.allowedY);
  });
});
