// A batch of all-or-nothing calls (lua/limits.lua) sends a call's arguments only when they differ from
// the previous call's: the requests of one rule set at one cost and instant repeat every policy
// argument, so the second and later send their keys only (a negative key count; src/redis/scripts.ts
// repeatsArgs). Held here to the same requests decided one at a time: the same decisions and the same
// Redis state, key by key, with changes of cost, of rule set and of instant, a refusal in the middle
// and a key charged twice in the batch. MONITOR shows which calls went short.
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { Sluice } from '../../src/index.js';
import { limitAll } from '../../src/limiters/all-or-nothing.js';
import type { Limiter } from '../../src/limiters/limiter.js';
import { useTwinBackends } from '../helpers/twin-backends.js';
import { FIRST_SEND_COMMANDS } from '../helpers/script-calls.js';

const NOW_MS = 1_900_000_000_000;
type Rule = 'tb' | 'sc' | 'fw';
/** Requests in issue order: the rules each needs, the caller key, the cost, ms after NOW_MS. */
const REQUESTS: [Rule[], string, number, number][] = [
  [['tb', 'sc', 'fw'], 'u1', 1, 0],
  [['tb', 'sc', 'fw'], 'u2', 1, 0], // repeats
  [['tb', 'sc', 'fw'], 'u1', 1, 0], // repeats, u1 again: sees the first charge
  [['tb', 'sc', 'fw'], 'u1', 2, 0], // another cost: its own arguments; fw refuses (1 + 1 + 2 > 3)
  [['tb', 'sc', 'fw'], 'u3', 2, 0], // repeats the refused call's arguments, allowed
  [['tb', 'sc'], 'u1', 1, 0], // another rule set
  [['tb', 'sc'], 'u2', 1, 0], // repeats
  [['tb', 'sc', 'fw'], 'u4', 1, 0], // back to three rules: its own
  [['tb', 'sc', 'fw'], 'u4', 1, 5], // another instant: its own
  [['tb', 'sc', 'fw'], 'u5', 1, 5], // repeats
];
/** What MONITOR must see: each call's key count, negative for a call that sent no arguments. */
const KEY_COUNTS = ['3', '-3', '-3', '3', '-3', '2', '-2', '3', '3', '-3'];
/** Arguments per limit after its script's name (lua/includes/decide-limits.lua LIMIT_ARGC). */
const ARGC: Record<Rule, number> = { tb: 5, sc: 6, fw: 5 };

function limiters(s: Sluice): Record<Rule, Limiter> {
  return {
    tb: s.limiter({ algorithm: 'token-bucket', capacity: 10, refillPerSecond: 1, name: 'rep-tb', timeoutMs: 10_000 }),
    sc: s.limiter({ algorithm: 'sliding-counter', limit: 10, windowMs: 60_000, name: 'rep-sc', timeoutMs: 10_000 }),
    fw: s.limiter({ algorithm: 'fixed-window', limit: 3, windowMs: 60_000, name: 'rep-fw', timeoutMs: 10_000 }),
  };
}

function request(l: Record<Rule, Limiter>, [rules, key, cost, dt]: (typeof REQUESTS)[number]) {
  return limitAll(rules.map((r) => ({ limiter: l[r], key, options: { cost, nowMs: NOW_MS + dt } })));
}

describe('all-or-nothing batches send repeated arguments once', () => {
  const { sluices, raws } = useTwinBackends('rep');

  it('one batch decides and leaves exactly what the same requests one at a time do', async () => {
    const [batched, alone] = sluices.map(limiters) as [Record<Rule, Limiter>, Record<Rule, Limiter>];
    // Connected first: a call made before the client is ready does not join a batch.
    for (const l of [batched, alone]) await request(l, [['tb', 'sc'], 'warm', 1, 0]);
    const monitor = await raws[0]!.monitor();
    const calls: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (FIRST_SEND_COMMANDS.has(args[0]?.toLowerCase() ?? '')) calls.push(args);
    });
    const fromBatch = await Promise.all(REQUESTS.map((r) => request(batched, r)));
    const oneByOne = [];
    for (const r of REQUESTS) oneByOne.push(await request(alone, r));
    await raws[0]!.ping();
    await new Promise((r) => setTimeout(r, 50));
    monitor.disconnect();

    expect(fromBatch).toEqual(oneByOne);
    expect(fromBatch.map((d) => d.allowed)).toEqual([true, true, true, false, true, true, true, true, true, true]);
    const state = async (raw: Redis) => {
      const out: Record<string, string | null> = {};
      for (const key of (await raw.keys('*rep-*')).sort()) out[key] = await raw.get(key);
      return out;
    };
    const left = await state(raws[0]!);
    expect(Object.keys(left).length).toBeGreaterThan(10);
    expect(left).toEqual(await state(raws[1]!));

    // One script call for the batch: m, the key counts, then only the arguments of calls that sent theirs.
    expect(calls).toHaveLength(1);
    const [, , numKeys, ...rest] = calls[0]!;
    const argv = rest.slice(Number(numKeys));
    expect(argv[0]).toBe(String(REQUESTS.length));
    expect(argv.slice(1, 1 + REQUESTS.length)).toEqual(KEY_COUNTS);
    const sent = REQUESTS.filter((_, i) => !KEY_COUNTS[i]!.startsWith('-')).reduce((n, [rules]) => n + rules.reduce((m, r) => m + 1 + ARGC[r], 0), 0);
    expect(argv.length).toBe(1 + REQUESTS.length + sent);
    expect(Number(numKeys)).toBe(REQUESTS.reduce((n, [rules]) => n + rules.length, 0));
  });
});
