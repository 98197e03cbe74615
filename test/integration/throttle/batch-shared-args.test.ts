// A batch of admissions sends a throttle's own keys and limits once while they stay the same
// (script-table batchShared, src/redis/script-forms.ts batchedManyLua): a call that repeats the previous
// call's sends only its lane's keys and its own arguments. Held here to the same submits sent one at a
// time: the same replies and the same Redis state, key by key, with calls of two throttles, a plan,
// tenants and a duplicate interleaved (each of them breaks or resumes the sharing). MONITOR shows the
// batch really shared.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { Sluice, SubmitOptions } from '../../../src/index.js';
import { useTwinBackends } from '../../helpers/twin-backends.js';
import { FIRST_SEND_COMMANDS } from '../../helpers/script-calls.js';

const A = { ratePerSecond: 5, capacity: 50, plans: { gold: { ratePerSecond: 10, capacity: 20 } } };
const B = { ratePerSecond: 7, capacity: 9 };
const NOW_MS = 1_900_000_000_000;

/** The submits, in issue order: [throttle, key, options]. */
const SUBMITS: ['a' | 'b', string, SubmitOptions][] = [
  ['a', 'k0', { id: 'j1' }],
  ['a', 'k1', { id: 'j2' }],
  ['a', 'k0', { id: 'j3', tenant: 't1' }],
  ['b', 'k0', { id: 'j4' }],
  ['a', 'k2', { id: 'j5', plan: 'gold' }],
  ['a', 'k2', { id: 'j6', plan: 'gold', cost: 3 }],
  ['a', 'k0', { id: 'j1' }],
  ['a', 'k1', { id: 'j7' }],
  ['b', 'k0', { id: 'j8' }],
  ['b', 'k1', { id: 'j9' }],
];

/**
 * Every key of `prefix` with its content; what depends on Redis's clock (job timestamps, delayed scores, stream
 * ids) left out. A delayed set's members as a set: jobs parked in one ms by separate calls may share a score
 * (includes/bull-park.lua numbers them within a call), so their order there is the members' own.
 */
async function dump(raw: Redis, prefix: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await raw.keys(`*${prefix}*`)).sort()) {
    const type = await raw.type(key);
    if (type === 'hash') {
      const h = await raw.hgetall(key);
      delete h.timestamp;
      out[key] = h;
    } else if (type === 'zset') {
      out[key] = key.endsWith(':delayed') ? (await raw.zrange(key, '0', '-1')).sort() : await raw.zrange(key, '0', '-1', 'WITHSCORES');
    } else if (type === 'stream') {
      out[key] = (await raw.xrange(key, '-', '+')).map(([, fields]) => fields);
    } else if (type === 'string') out[key] = await raw.get(key);
    else out[key] = type;
  }
  return out;
}

describe('admission batches share a throttle’s keys and limits between calls', () => {
  const { sluices, raws } = useTwinBackends('shared');

  it('one batch leaves exactly what the same submits one at a time leave, and sends shared calls short', async () => {
    const [batched, alone] = sluices as [Sluice, Sluice];
    const throttles = (s: Sluice) => ({ a: s.throttle('a', A), b: s.throttle('b', B) });
    const tb = throttles(batched);
    const ta = throttles(alone);
    // The first submit of a throttle waits for its queue (not the batched hot path): one each, first.
    for (const t of [tb, ta]) {
      await t.a.submit('warm', {}, { id: 'w1', nowMs: NOW_MS });
      await t.b.submit('warm', {}, { id: 'w2', nowMs: NOW_MS });
    }
    const monitor = await raws[0]!.duplicate().monitor();
    const evalKeys: number[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (FIRST_SEND_COMMANDS.has(args[0]?.toLowerCase() ?? '')) evalKeys.push(Number(args[2]));
    });
    // All in one turn: one script call on the batched side.
    const fromBatch = await Promise.all(SUBMITS.map(([t, key, o], i) => tb[t].submit(key, { i }, { ...o, nowMs: NOW_MS })));
    const oneByOne = [];
    for (const [i, [t, key, o]] of SUBMITS.entries()) oneByOne.push(await ta[t].submit(key, { i }, { ...o, nowMs: NOW_MS }));
    await raws[0]!.ping();
    await new Promise((r) => setTimeout(r, 50));
    monitor.disconnect();

    expect(fromBatch).toEqual(oneByOne);
    expect(fromBatch[6]).toMatchObject({ admitted: true, duplicate: true });
    expect(await dump(raws[0]!, 'shared')).toEqual(await dump(raws[1]!, 'shared'));
    // 12 keys for a call that shares nothing with the one before it (the first; a change of throttle,
    // of plan: other limits), 4 for one that shares: a, a, a(tenant: own), b, a(gold), a(gold), a, a, b, b.
    expect(evalKeys).toEqual([12 + 4 + 4 + 12 + 12 + 4 + 12 + 4 + 12 + 4]);
  });
});
