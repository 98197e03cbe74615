// The control plane on a real Redis: overrides set, listed, ended by their time and followed by a
// second process's cache within its poll; plans choose a lane's capacity; drain and pause flags; the
// capped audit stream read newest first with a cursor; per-second figures shared by processes.
import { describe, expect, it } from 'vitest';
import { AuditLog } from '../../../src/admin/audit.js';
import { ControlCache } from '../../../src/admin/control-cache.js';
import { ControlKeys } from '../../../src/admin/control-keys.js';
import { ControlStore } from '../../../src/admin/control-store.js';
import { LiveFigures, readFigures } from '../../../src/admin/figures.js';
import { overrideBodySchema } from '../../../src/admin/override.js';
import { ThrottleKeys } from '../../../src/throttle/keys.js';
import { useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

const ctx = useBackend('single');

describe('overrides', () => {
  it('are followed by another process within its poll, field by field, until removed or ended', async () => {
    const admin = ctx.sluice;
    const other = ctx.backend.sluice({ prefix: admin.keys.prefix });
    const keys = new ControlKeys(admin.keys);
    const store = new ControlStore(admin.redis, keys);
    const cache = new ControlCache(other.redis, keys, (q) => new ThrottleKeys(other.keys, q), () => ['q'], { intervalMs: 50 });
    await cache.start();
    other.useOverrides(cache);
    const throttle = other.throttle('q', { ratePerSecond: 1, capacity: 2 });
    const t = new ThrottleKeys(admin.keys, 'q');

    expect(throttle.limitsOf('acme')).toEqual({ ratePerSecond: 1, capacity: 2, burst: 0, maxWaitMs: 0 });
    await store.setOverride(t, 'acme', overrideBodySchema.parse({ capacity: 5, ratePerSecond: 4 }), 'ops', Date.now());
    await until(() => throttle.limitsOf('acme').capacity === 5, 10_000, 'the override');
    expect(throttle.limitsOf('acme')).toEqual({ ratePerSecond: 4, capacity: 5, burst: 0, maxWaitMs: 0 });
    expect(throttle.limitsOf('globex').capacity).toBe(2);
    for (let i = 0; i < 5; i++) expect((await throttle.submit('acme', i)).admitted).toBe(true);
    expect((await throttle.submit('acme', 5)).admitted).toBe(false);

    const listed = (await store.overrides(t, Date.now())).inForce;
    expect(listed).toEqual([expect.objectContaining({ lane: 'acme', capacity: 5, ratePerSecond: 4, by: 'ops' })]);
    expect((await store.removeOverride(t, 'acme')).removed).toBe(true);
    await until(() => throttle.limitsOf('acme').capacity === 2, 10_000, 'back to the rules');

    await store.setOverride(t, 'acme', overrideBodySchema.parse({ burst: 3, until: new Date(Date.now() + 300).toISOString() }), 'ops', Date.now());
    await until(() => throttle.limitsOf('acme').burst === 3, 10_000, 'the timed override');
    await until(() => throttle.limitsOf('acme').burst === 0, 10_000, 'its end');
    // Ended: no longer in force, and not removed by the listing (endOverride removes it and re-paces its lane).
    expect(await store.overrides(t, Date.now())).toEqual({ inForce: [], ended: ['acme'] });
    expect(await admin.redis.hlen(keys.overrides(t))).toBe(1);
    expect((await store.endOverride(t, 'acme', Date.now()))?.ended).toMatchObject({ lane: 'acme', burst: 3 });
    expect(await admin.redis.hlen(keys.overrides(t))).toBe(0);
    cache.close();
  });

  it('refuses invalid values naming the field', () => {
    const bad = overrideBodySchema.safeParse({ capacity: -1, ratePerSecond: 'fast' });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['capacity', 'ratePerSecond']);
    expect(overrideBodySchema.safeParse({}).error!.issues[0]!.message).toMatch(/at least one/);
    expect(overrideBodySchema.safeParse({ capacity: 1, until: 'tomorrow' }).error!.issues[0]!.path).toEqual(['until']);
  });
});

describe('plans', () => {
  it('give a lane its plan capacity and rate; an unknown plan gets the default plan', async () => {
    const throttle = ctx.sluice.throttle('planned', {
      ratePerSecond: 1,
      capacity: 1,
      plans: { free: { ratePerSecond: 1, capacity: 2 }, pro: { ratePerSecond: 20, capacity: 6, burst: 2 } },
      defaultPlan: 'free',
    });
    expect(throttle.limitsOf('x', 'pro')).toEqual({ ratePerSecond: 20, capacity: 6, burst: 2, maxWaitMs: 0 });
    expect(throttle.limitsOf('x', 'gold')).toEqual({ ratePerSecond: 1, capacity: 2, burst: 0, maxWaitMs: 0 });
    for (let i = 0; i < 6; i++) expect((await throttle.submit('p', i, { plan: 'pro' })).admitted).toBe(true);
    expect((await throttle.submit('p', 6, { plan: 'pro' })).admitted).toBe(false);
    for (let i = 0; i < 2; i++) expect((await throttle.submit('f', i)).admitted).toBe(true);
    const full = await throttle.submit('f', 2);
    expect(full.admitted === false && full.capacity).toBe(2);
    expect(() => ctx.sluice.throttle('bad-plan', { ratePerSecond: 1, capacity: 1, plans: {}, defaultPlan: 'gold' })).toThrow(/defaultPlan/);
  });
});

describe('drain and pause flags', () => {
  it('are read by every cache', async () => {
    const keys = new ControlKeys(ctx.sluice.keys);
    const store = new ControlStore(ctx.sluice.redis, keys);
    const t = new ThrottleKeys(ctx.sluice.keys, 'flags');
    const ended: string[] = [];
    const cache = new ControlCache(ctx.sluice.redis, keys, (q) => new ThrottleKeys(ctx.sluice.keys, q), () => ['flags'], { intervalMs: 50, onPauseEnded: (q) => ended.push(q) });
    await cache.start();
    await store.setDrain(t, true);
    await store.setPause(t, Date.now() + 200);
    await until(() => cache.control('flags').draining && cache.control('flags').paused, 10_000, 'the flags');
    await until(() => ended.includes('flags'), 10_000, 'the timed pause to end');
    expect(await store.clearPause(t)).toBe(true);
    expect(await store.clearPause(t)).toBe(false);
    await store.setDrain(t, false);
    await until(() => !cache.control('flags').draining && !cache.control('flags').paused, 10_000, 'cleared');
    cache.close();
  });
});

describe('audit', () => {
  it('records who, when and what, newest first, paged by cursor', async () => {
    const keys = new ControlKeys(ctx.sluice.keys);
    const audit = new AuditLog(ctx.sluice.redis, keys.audit);
    for (let i = 0; i < 5; i++) await audit.record({ who: 'ops', token: 'abcd1234', action: 'drain', queue: 'q', details: { i } });
    const first = await audit.read(3);
    expect(first.entries.map((e) => (e.details as { i: number }).i)).toEqual([4, 3, 2]);
    expect(first.entries[0]).toMatchObject({ who: 'ops', token: 'abcd1234', action: 'drain', queue: 'q' });
    expect(Math.abs(Date.parse(first.entries[0]!.at) - Date.now())).toBeLessThan(5_000);
    const second = await audit.read(3, first.next);
    expect(second.entries.map((e) => (e.details as { i: number }).i)).toEqual([1, 0]);
    expect(second.next).toBeUndefined();
  });
});

describe('live figures', () => {
  it('add the counts of several processes into per-second counters', async () => {
    const keys = new ControlKeys(ctx.sluice.keys);
    const tk = (q: string) => new ThrottleKeys(ctx.sluice.keys, q);
    const a = new LiveFigures();
    const b = new LiveFigures();
    a.attach(ctx.sluice.redis, keys, tk, 10_000);
    b.attach(ctx.sluice.redis, keys, tk, 10_000);
    for (let i = 0; i < 3; i++) a.onStart({ queue: 'fig' });
    b.onStart({ queue: 'fig' });
    b.onSubmit({ queue: 'fig', outcome: 'queue_full' });
    b.onSubmit({ queue: 'fig', outcome: 'admitted' });
    await Promise.all([a.close(), b.close()]);
    // Read one second later: the counts are in the last whole second.
    const f = await readFigures(ctx.sluice.redis, keys, tk('fig'), Date.now() + 1_000);
    expect(f.startedLast60s).toBe(4);
    expect(f.refusedLast60s).toBe(1);
  });
});
