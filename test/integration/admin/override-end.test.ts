// An override that ends by itself (`until`): the first process whose control cache sees the end removes
// it (only if it is still the one that ended) and paces the lane's queued work by its plan again at once.
// Before, a lane with a backlog and no new admission went on at the override's rate past its end.
import { describe, expect, it } from 'vitest';
import { AuditLog } from '../../../src/admin/audit.js';
import { ControlCache } from '../../../src/admin/control-cache.js';
import { ControlKeys } from '../../../src/admin/control-keys.js';
import { ControlStore } from '../../../src/admin/control-store.js';
import { applyOverride } from '../../../src/admin/lanes.js';
import { endTimedOverride } from '../../../src/admin/override-end.js';
import { limitsOfOverride, overrideBodySchema } from '../../../src/admin/override.js';
import { ThrottleKeys } from '../../../src/throttle/keys.js';
import { useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

const ctx = useBackend('single');

/** A queue `name` at 20/s and the control store, keys and audit log around it. */
function setup(name: string) {
  const sluice = ctx.sluice;
  const keys = new ControlKeys(sluice.keys);
  return {
    sluice,
    keys,
    store: new ControlStore(sluice.redis, keys),
    audit: new AuditLog(sluice.redis, keys.audit),
    throttle: sluice.throttle(name, { ratePerSecond: 20, capacity: 100 }),
    t: new ThrottleKeys(sluice.keys, name),
  };
}

describe('an override that ends by itself', () => {
  it('is removed once ended, and the lane with queued work is paced by its plan again; a replaced one stays', async () => {
    const { sluice, keys, store, audit, throttle, t } = setup('oe');
    for (let i = 0; i < 5; i++) expect((await throttle.submit('acme', i)).admitted).toBe(true);
    const interval = () => sluice.redis.hget(throttle.keys.lane('acme'), 'i');
    expect(await interval()).toBe('50000');

    const untilMs = Date.now() + 60_000;
    const set = await store.setOverride(t, 'acme', overrideBodySchema.parse({ ratePerSecond: 2, until: new Date(untilMs).toISOString() }), 'ops', Date.now());
    await applyOverride(sluice.redis, throttle, 'acme', limitsOfOverride(set.stored), set.version);
    expect(await interval()).toBe('500000');
    // Not ended yet: nothing happens.
    expect(await endTimedOverride(sluice.redis, throttle, store, audit, 'acme', untilMs - 1)).toBe(false);
    expect(await sluice.redis.hexists(keys.overrides(t), 'acme')).toBe(1);
    // Ended: removed, the lane back at its plan's 20/s with its jobs still queued, and audited.
    expect(await endTimedOverride(sluice.redis, throttle, store, audit, 'acme', untilMs)).toBe(true);
    expect(await sluice.redis.hexists(keys.overrides(t), 'acme')).toBe(0);
    expect(await interval()).toBe('50000');
    expect(Number(await sluice.redis.hget(throttle.keys.lane('acme'), 'd'))).toBe(5);
    const [entry] = (await audit.read(10)).entries;
    expect(entry).toMatchObject({ who: 'sluice', action: 'override.remove', queue: 'oe', target: 'acme', details: { reason: 'the override ended' } });
    // A second process seeing the same end removes nothing.
    expect(await endTimedOverride(sluice.redis, throttle, store, audit, 'acme', untilMs)).toBe(false);

    // An operator replaced the ended override before it was removed: the new one stays.
    const first = await store.setOverride(t, 'acme', overrideBodySchema.parse({ ratePerSecond: 2, until: new Date(Date.now() + 60_000).toISOString() }), 'ops', Date.now());
    await applyOverride(sluice.redis, throttle, 'acme', limitsOfOverride(first.stored), first.version);
    const stored = await sluice.redis.hget(keys.overrides(t), 'acme');
    const second = await store.setOverride(t, 'acme', overrideBodySchema.parse({ ratePerSecond: 5 }), 'ops', Date.now());
    await applyOverride(sluice.redis, throttle, 'acme', limitsOfOverride(second.stored), second.version);
    expect(await sluice.redis.hget(keys.overrides(t), 'acme')).not.toBe(stored);
    expect(await endTimedOverride(sluice.redis, throttle, store, audit, 'acme', Date.now() + 120_000)).toBe(false);
    expect(JSON.parse((await sluice.redis.hget(keys.overrides(t), 'acme'))!)).toMatchObject({ ratePerSecond: 5 });
    expect(await interval()).toBe('200000');
  });

  it("is reported by a process's control cache at each poll until it is gone", async () => {
    const { sluice, keys, store, audit, throttle, t } = setup('oe2');
    const seen: string[] = [];
    const cache = new ControlCache(sluice.redis, keys, (q) => new ThrottleKeys(sluice.keys, q), () => ['oe2'], {
      intervalMs: 50,
      onOverrideEnded: (queue, lane) => {
        seen.push(`${queue}/${lane}`);
        void endTimedOverride(sluice.redis, throttle, store, audit, lane);
      },
    });
    await cache.start();
    try {
      expect((await throttle.submit('globex', 1)).admitted).toBe(true);
      const set = await store.setOverride(t, 'globex', overrideBodySchema.parse({ ratePerSecond: 1, until: new Date(Date.now() + 300).toISOString() }), 'ops', Date.now());
      await applyOverride(sluice.redis, throttle, 'globex', limitsOfOverride(set.stored), set.version);
      expect(await sluice.redis.hget(throttle.keys.lane('globex'), 'i')).toBe('1000000');
      await until(async () => (await sluice.redis.hexists(keys.overrides(t), 'globex')) === 0, 10_000, 'the ended override removed');
      expect(seen[0]).toBe('oe2/globex');
      expect(await sluice.redis.hget(throttle.keys.lane('globex'), 'i')).toBe('50000');
    } finally {
      cache.close();
    }
  });
});
