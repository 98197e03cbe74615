// Listing a queue's overrides (GET /v1/admin/queues/:queue/overrides) when an override has ended by its
// `until` and no control plane has removed it yet (it polls every 250 ms; this app has none): the
// listing leaves it out and ends it in full, as the control plane would. Before, the listing deleted it
// with a plain HDEL: the lane's queued work then went on at the override's pace (the end that re-paces
// it found nothing to end), and an override an operator set meanwhile could be deleted.
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { AuditLog } from '../../../src/admin/audit.js';
import { ControlKeys } from '../../../src/admin/control-keys.js';
import { ThrottleKeys } from '../../../src/throttle/keys.js';
import { useRulesApp } from '../../helpers/rules-app.js';
import { until } from '../../helpers/throttle-procs.js';

const TOKEN = 'override-listing-token-0123456789';
const admin = { Authorization: `Bearer ${TOKEN}` };
const ctx = useRulesApp(
  `auth: none
queues:
  - name: orders
    rate_per_second: 20
    capacity: 100
    key: body
    handler: { type: module, path: ./none.mjs }
`,
  TOKEN,
);

describe('listing overrides', () => {
  it('leaves out an ended override and ends it in full: removed, the lane paced by its plan again, audited', async () => {
    const keys = new ControlKeys(ctx.sluice.keys);
    const t = new ThrottleKeys(ctx.sluice.keys, 'orders');
    const interval = () => ctx.sluice.redis.hget(t.lane('acme'), 'i');
    for (let i = 0; i < 5; i++) expect((await request(ctx.app).post('/v1/queues/orders/jobs').send({ key: 'acme', payload: { i } })).status).toBe(202);
    expect(await interval()).toBe('50000');

    const untilMs = Date.now() + 400;
    const set = await request(ctx.app).put('/v1/admin/queues/orders/overrides/acme').set(admin).send({ ratePerSecond: 2, until: new Date(untilMs).toISOString() });
    expect(set.status).toBe(200);
    expect(await interval()).toBe('500000');
    // A lasting override on another lane: listed, untouched.
    expect((await request(ctx.app).put('/v1/admin/queues/orders/overrides/globex').set(admin).send({ capacity: 7 })).status).toBe(200);
    const before = await request(ctx.app).get('/v1/admin/queues/orders/overrides').set(admin);
    expect(before.body.overrides.map((o: { lane: string }) => o.lane)).toEqual(['acme', 'globex']);
    const counted = await request(ctx.app).get('/v1/admin/queues').set(admin);
    expect(counted.body.queues.find((q: { name: string }) => q.name === 'orders').live.overrides).toBe(2);

    await until(() => Date.now() > untilMs, 5_000, 'the override to end');
    // Still stored: nothing else has ended it (no control plane in this app). The overview counts the
    // overrides in force only.
    expect(await ctx.sluice.redis.hexists(keys.overrides(t), 'acme')).toBe(1);
    const overview = await request(ctx.app).get('/v1/admin/queues').set(admin);
    expect(overview.body.queues.find((q: { name: string }) => q.name === 'orders').live.overrides).toBe(1);
    const listed = await request(ctx.app).get('/v1/admin/queues/orders/overrides').set(admin);
    expect(listed.status).toBe(200);
    expect(listed.body.overrides.map((o: { lane: string }) => o.lane)).toEqual(['globex']);
    expect(await ctx.sluice.redis.hexists(keys.overrides(t), 'acme')).toBe(0);
    expect(await ctx.sluice.redis.hexists(keys.overrides(t), 'globex')).toBe(1);
    // The lane's five queued jobs are paced by the plan's 20/s again, not the ended override's 2/s.
    expect(await interval()).toBe('50000');
    expect(Number(await ctx.sluice.redis.hget(t.lane('acme'), 'd'))).toBe(5);
    const [entry] = (await new AuditLog(ctx.sluice.redis, keys.audit).read(10)).entries;
    expect(entry).toMatchObject({ who: 'sluice', action: 'override.remove', queue: 'orders', target: 'acme', details: { reason: 'the override ended' } });
  });

  it('removes a stored override that no longer parses (never in force), audited as unreadable', async () => {
    const keys = new ControlKeys(ctx.sluice.keys);
    const t = new ThrottleKeys(ctx.sluice.keys, 'orders');
    await ctx.sluice.redis.hset(keys.overrides(t), 'initech', '{"ratePerSecond":');
    const listed = await request(ctx.app).get('/v1/admin/queues/orders/overrides').set(admin);
    expect(listed.body.overrides.map((o: { lane: string }) => o.lane)).not.toContain('initech');
    expect(await ctx.sluice.redis.hexists(keys.overrides(t), 'initech')).toBe(0);
    const [entry] = (await new AuditLog(ctx.sluice.redis, keys.audit).read(10)).entries;
    expect(entry).toMatchObject({ who: 'sluice', action: 'override.remove', target: 'initech', details: { reason: 'the stored override could not be read' } });
  });
});
