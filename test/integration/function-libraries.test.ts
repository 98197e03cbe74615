// Every script runs as a Redis 7 function (src/redis/lua-functions.ts): its includes made once per load,
// its body per call, with the includes' per-run state back at its start on every call. Held here on a
// real Redis: every script's library loads; per-run state never leaks from one call to the next; calls
// go by FCALL once a library is in; FUNCTION FLUSH (or a restart without persistence) loses nothing, the
// call falls back to EVAL and the library is loaded again; a user whose ACL refuses FUNCTION keeps
// EVALSHA and gets the same answers; on a cluster every master gets the libraries, and masters that lose
// them (FUNCTION FLUSH, a new master) answer by EVAL and get them back; at Redis's memory ceiling a
// call behaves as under EVAL (an FCALL refused with OOM goes again by EVALSHA).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSluice } from '../../src/index.js';
import { functionLibrary } from '../../src/redis/lua-functions.js';
import { withoutIncludes } from '../../src/redis/lua-includes.js';
import { ScriptRegistry } from '../../src/redis/scripts.js';
import { loadScripts, luaDir } from '../../src/redis/script-forms.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';
import { useBackend } from '../helpers/fixtures.js';
import { fillToCeiling } from '../helpers/memory-ceiling.js';
import { until } from '../helpers/throttle-procs.js';

let server: RedisServer;
let raw: Redis;

beforeAll(async () => {
  server = await startRedis();
  raw = new Redis(server.port, '127.0.0.1');
});
afterAll(async () => {
  raw?.disconnect();
  await server?.dispose();
});

const include = (name: string) => ({ name, text: withoutIncludes(readFileSync(join(luaDir(), 'includes', `${name}.lua`), 'utf8')) });

/** Commands of each kind the server has run (INFO commandstats), by name. */
async function commandCalls(client: Redis = raw): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of (await client.info('commandstats')).matchAll(/cmdstat_([a-z|_]+):calls=(\d+)/g)) out[m[1]!] = Number(m[2]);
  return out;
}


describe('function libraries', () => {
  it('every script and batched form loads as a library, under its own hashed name', async () => {
    const scripts = [...loadScripts().values()];
    expect(scripts.length).toBeGreaterThan(20);
    for (const s of scripts) expect(await raw.call('FUNCTION', 'LOAD', 'REPLACE', s.library)).toBe(s.fn);
    expect(new Set(scripts.map((s) => s.fn)).size).toBe(scripts.length);
  });

  it('numbers parsed once are kept across calls (upper-case tables), bounded, and read as tonumber reads them', async () => {
    // The text of each call, its number as the library answers it (-1 for a text that is no number), and
    // the count of texts kept: the table is emptied at 4,096, so 5,000 distinct texts come back right too.
    const lib = functionLibrary('probe-numbers', {
      includes: [include('now')],
      body: "local n = number_of(ARGV[1]) return {tostring(n or -1), PARSED_NUMBERS.count}",
    });
    await raw.call('FUNCTION', 'LOAD', 'REPLACE', lib.code);
    const ask = async (text: string) => (await raw.call('FCALL', lib.fn, '0', text)) as [string, number];
    expect(await ask('1000000000')).toEqual(['1000000000', 1]);
    expect(await ask('1000000000')).toEqual(['1000000000', 1]); // kept: not parsed or counted again
    expect((await ask('1e3'))[0]).toBe('1000');
    expect((await ask('0'))[0]).toBe('0');
    expect((await ask('2.5'))[0]).toBe('2.5');
    expect((await ask('x'))[0]).toBe('-1');
    const pipeline = raw.pipeline();
    for (let i = 0; i < 5_000; i++) pipeline.call('FCALL', lib.fn, '0', String(10_000 + i));
    const replies = (await pipeline.exec())!.map(([e, r]) => (e ? e : r)) as [string, number][];
    replies.forEach((r, i) => expect(r[0]).toBe(String(10_000 + i)));
    expect(Math.max(...replies.map((r) => r[1]))).toBe(4_096);
    expect(replies.at(-1)![1]).toBeLessThan(4_096);
  });

  it("an include's per-run state starts afresh on every call, as under EVAL", async () => {
    // now.lua caches Redis TIME per run: two calls 20 ms apart must read two instants.
    const lib = functionLibrary('probe-now', { includes: [include('now')], body: "return tostring(now_us(''))" });
    await raw.call('FUNCTION', 'LOAD', 'REPLACE', lib.code);
    const first = Number(await raw.call('FCALL', lib.fn, '0'));
    await new Promise((r) => setTimeout(r, 20));
    const second = Number(await raw.call('FCALL', lib.fn, '0'));
    expect(second - first).toBeGreaterThanOrEqual(15_000);
    // admit-memo.lua's memos: a run that reads a lane, then a run after the lane changed, reads it again.
    const memo = functionLibrary('probe-memo', { includes: [include('admit-memo')], body: "return lane_state(KEYS[1])[3] or 'none'" });
    await raw.call('FUNCTION', 'LOAD', 'REPLACE', memo.code);
    expect(await raw.call('FCALL', memo.fn, '1', 'probe:lane')).toBe('none');
    await raw.hset('probe:lane', 'd', '7');
    expect(await raw.call('FCALL', memo.fn, '1', 'probe:lane')).toBe('7');
  });

  it('decisions go by FCALL once the library is in; FUNCTION FLUSH loses no decision and the library comes back', async () => {
    const sluice = createSluice({ redis: server.url, prefix: 'fl' });
    try {
      const limiter = sluice.limiter({ algorithm: 'token-bucket', capacity: 100, refillPerSecond: 1, name: 'fl' });
      const fn = loadScripts().get('token-bucket')!.fn;
      const loaded = async () => ((await raw.call('FUNCTION', 'LIST', 'LIBRARYNAME', fn)) as unknown[]).length === 1;
      await raw.call('FUNCTION', 'FLUSH');
      expect((await limiter.limit('k', { nowMs: 0 })).remaining).toBe(99);
      await until(loaded, 5_000, 'the library loaded');
      const before = await commandCalls();
      expect((await limiter.limit('k', { nowMs: 0 })).remaining).toBe(98);
      const after = await commandCalls();
      expect((after.fcall ?? 0) - (before.fcall ?? 0)).toBe(1);
      expect(after.evalsha ?? 0).toBe(before.evalsha ?? 0);

      await raw.call('FUNCTION', 'FLUSH');
      await raw.script('FLUSH');
      const d = await limiter.limit('k', { nowMs: 0 });
      expect([d.failure, d.remaining]).toEqual([undefined, 97]);
      // Sent again as EVAL (it did not run), and the library is loaded again for the next calls.
      expect((await commandCalls()).eval ?? 0).toBeGreaterThan(before.eval ?? 0);
      await until(loaded, 5_000, 'the library loaded');
      expect((await limiter.limit('k', { nowMs: 0 })).remaining).toBe(96);
    } finally {
      await sluice.close();
    }
  });

  it('at the memory ceiling a loaded function behaves as EVAL did: the sliding log still decides, a new window key fails by its mode', async () => {
    // Redis refuses an FCALL of a write function at the ceiling before running it; EVAL ran the script
    // and failed only its first memory-taking write (the sliding log trims first, so it goes on).
    const ceiling = await startRedis();
    const admin = new Redis(ceiling.port, '127.0.0.1');
    const sluice = createSluice({ redis: ceiling.url, prefix: 'oom' });
    try {
      const log = sluice.limiter({ algorithm: 'sliding-log', limit: 1000, windowMs: 60_000, name: 'oom-log' });
      const window = sluice.limiter({ algorithm: 'fixed-window', limit: 1000, windowMs: 60_000, name: 'oom-fw', failMode: 'closed' });
      expect((await log.limit('warm')).allowed).toBe(true);
      expect((await window.limit('warm')).allowed).toBe(true);
      const fns = ['sliding-log', 'fixed-window'].map((name) => loadScripts().get(name)!.fn);
      await until(async () => ((await admin.call('FUNCTION', 'LIST')) as unknown[]).length >= fns.length, 5_000, 'both libraries loaded');
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await admin.config('SET', 'maxmemory', '8mb');
      await fillToCeiling(admin);
      await admin.config('RESETSTAT');
      const logged = await log.limit('new-log');
      expect([logged.failure, logged.allowed]).toEqual([undefined, true]);
      expect(await window.limit('new-window')).toMatchObject({ allowed: false, failure: 'fail-closed' });
      // Both FCALLs were refused before running; each went again by EVALSHA (the window's failed at its write).
      const stats = await admin.info('commandstats');
      expect(Number(/cmdstat_fcall:.*rejected_calls=(\d+)/.exec(stats)?.[1])).toBe(2);
      expect(Number(/cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1])).toBe(2);
    } finally {
      await sluice.close();
      admin.disconnect();
      await ceiling.dispose();
    }
  });

  it('a load that met no connection does not keep the library out: the next one loads it', async () => {
    await raw.call('FUNCTION', 'FLUSH');
    const client = new Redis(server.port, '127.0.0.1', { lazyConnect: true, enableOfflineQueue: false });
    try {
      const registry = new ScriptRegistry(client, ['token-bucket']);
      // Not connected: the load fails without an answer from Redis (and sets the connection going).
      await expect(registry.load(['token-bucket'])).rejects.toThrow();
      if (client.status !== 'ready') await new Promise((r) => client.once('ready', r));
      await registry.load(['token-bucket']);
      const fn = loadScripts().get('token-bucket')!.fn;
      expect(((await raw.call('FUNCTION', 'LIST', 'LIBRARYNAME', fn)) as unknown[]).length).toBe(1);
    } finally {
      client.disconnect();
    }
  });

  it('a user whose ACL refuses FUNCTION gets the same decisions by EVALSHA', async () => {
    await raw.acl('SETUSER', 'nofn', 'on', '>pw', '~*', '&*', '+@all', '-function');
    const admin = new Redis(server.port, '127.0.0.1');
    const sluice = createSluice({ redis: `redis://nofn:pw@127.0.0.1:${server.port}`, prefix: 'acl' });
    try {
      await raw.call('FUNCTION', 'FLUSH');
      await admin.config('RESETSTAT');
      const limiter = sluice.limiter({ algorithm: 'fixed-window', limit: 3, windowMs: 60_000, name: 'acl' });
      const got = [];
      for (let i = 0; i < 5; i++) got.push((await limiter.limit('k', { nowMs: 0 })).allowed);
      expect(got).toEqual([true, true, true, false, false]);
      const calls = await commandCalls(admin);
      expect(calls.fcall ?? 0).toBe(0);
      expect(calls.evalsha).toBeGreaterThanOrEqual(4);
      expect((await raw.call('FUNCTION', 'LIST')) as unknown[]).toEqual([]);
    } finally {
      await sluice.close();
      admin.disconnect();
    }
  });
});

describe('function libraries on a cluster', () => {
  const ctx = useBackend('cluster');
  let attempt = 0;

  it('are loaded on every master; masters that lose them answer by EVAL and get them back', async () => {
    const cluster = ctx.backend.raw as Cluster;
    const masters = cluster.nodes('master');
    expect(masters).toHaveLength(3);
    const fn = loadScripts().get('fixed-window')!.fn;
    const everywhere = async () => (await Promise.all(masters.map(async (m) => ((await m.call('FUNCTION', 'LIST', 'LIBRARYNAME', fn)) as unknown[]).length))).every((n) => n === 1);
    // The slots known and every master connected before the first decision, and a deadline a loaded
    // machine keeps (the point is the libraries); a name of its own per attempt, so a retry starts afresh.
    await ctx.sluice.ready();
    const limiter = ctx.sluice.limiter({ algorithm: 'fixed-window', limit: 100, windowMs: 60_000, name: `clfn${attempt++}`, timeoutMs: 5_000 });
    // Keys on every master, one decision at a time (each alone: a batch needs two in one turn).
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
    for (const k of keys) {
      const d = await limiter.limit(k, { nowMs: 0 });
      expect([d.failure, d.remaining]).toEqual([undefined, 99]);
    }
    await until(everywhere, 5_000, 'the library on every master');
    await Promise.all(masters.map((m) => m.call('FUNCTION', 'FLUSH')));
    await Promise.all(masters.map((m) => m.config('RESETSTAT')));
    for (const k of keys) {
      const d = await limiter.limit(k, { nowMs: 0 });
      expect([d.failure, d.remaining]).toEqual([undefined, 98]);
    }
    const evals = (await Promise.all(masters.map((m) => m.info('commandstats')))).reduce((n, text) => n + Number(/cmdstat_eval:calls=(\d+)/.exec(text)?.[1] ?? 0), 0);
    expect(evals).toBeGreaterThanOrEqual(1);
    await until(everywhere, 5_000, 'the library back on every master');
    for (const k of keys) expect((await limiter.limit(k, { nowMs: 0 })).remaining).toBe(97);
  });
});
