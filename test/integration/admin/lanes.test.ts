// The busy-lane index on a real Redis: busiest first, an exact cursor over every lane (also when the
// page boundary's lane changes between pages), a lane's detail, and an operator's pause and resume.
import { describe, expect, it } from 'vitest';
import { lanePage, laneDetail, pauseLane, resumeLane } from '../../../src/admin/lanes.js';
import { ScriptRegistry } from '../../../src/redis/scripts.js';
import { useBackend } from '../../helpers/fixtures.js';

const ctx = useBackend('single');

async function allPages(scripts: ScriptRegistry, throttle: Parameters<typeof lanePage>[1], size: number, between?: (last: string) => Promise<void>) {
  const seen: { lane: string; depth: number }[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const p = await lanePage(scripts, throttle, size, cursor);
    seen.push(...p.lanes);
    if (!p.next) break;
    cursor = p.next;
    await between?.(p.lanes[p.lanes.length - 1]!.lane);
  }
  return seen;
}

describe('busy-lane index', () => {
  it('lists every busy lane once, busiest first, page by page', async () => {
    const throttle = ctx.sluice.throttle('idx', { ratePerSecond: 0.001, capacity: 100 });
    const depth = (i: number) => (i % 5) + 1;
    for (let i = 0; i < 40; i++) for (let j = 0; j < depth(i); j++) expect((await throttle.submit(`k${i}`, j)).admitted).toBe(true);
    const scripts = new ScriptRegistry(ctx.sluice.redis);
    const first = await lanePage(scripts, throttle, 3);
    expect(first.total).toBe(40);
    expect(first.lanes.map((l) => l.depth)).toEqual([5, 5, 5]);
    const seen = await allPages(scripts, throttle, 7);
    expect(seen).toHaveLength(40);
    expect(new Set(seen.map((l) => l.lane)).size).toBe(40);
    for (const l of seen) expect(l.depth).toBe(depth(Number(l.lane.slice(1))));
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [seen[i - 1]!, seen[i]!];
      expect(a.depth > b.depth || (a.depth === b.depth && a.lane > b.lane)).toBe(true);
    }
  });

  it('a sharded throttle: the pages merge its shards, in the same order; lane detail, pause and resume find its shard', async () => {
    const throttle = ctx.sluice.throttle('idx3', { ratePerSecond: 0.001, capacity: 100, shards: 3 });
    const depth = (i: number) => (i % 4) + 1;
    for (let i = 0; i < 30; i++) for (let j = 0; j < depth(i); j++) expect((await throttle.submit(`k${i}`, j)).admitted).toBe(true);
    const scripts = new ScriptRegistry(ctx.sluice.redis);
    // The lanes really are in several shards.
    const perShard = await Promise.all(throttle.shards.map((s) => ctx.sluice.redis.zcard(s.keys.busy)));
    expect(perShard.filter((n) => n > 0).length).toBe(3);
    expect((await lanePage(scripts, throttle, 5)).total).toBe(30);
    const seen = await allPages(scripts, throttle, 4);
    expect(seen).toHaveLength(30);
    expect(new Set(seen.map((l) => l.lane)).size).toBe(30);
    for (const l of seen) expect(l.depth).toBe(depth(Number(l.lane.slice(1))));
    for (let i = 1; i < seen.length; i++) {
      const [a, b] = [seen[i - 1]!, seen[i]!];
      expect(a.depth > b.depth || (a.depth === b.depth && a.lane > b.lane)).toBe(true);
    }
    expect(await laneDetail(ctx.sluice.redis, throttle, 'k3')).toMatchObject({ lane: 'k3', depth: 4, jobs: 4 });
    const until = Date.now() + 60_000;
    expect(await pauseLane(throttle, 'k3', until, Date.now())).toBeGreaterThanOrEqual(until - 5);
    expect((await laneDetail(ctx.sluice.redis, throttle, 'k3'))!.pausedUntilMs).toBeGreaterThanOrEqual(until - 5);
    expect(await resumeLane(scripts, ctx.sluice.redis, throttle, 'k3')).toBeGreaterThanOrEqual(until - 5);
    expect((await laneDetail(ctx.sluice.redis, throttle, 'k3'))!.pausedUntilMs).toBeUndefined();
  });

  it('neither skips nor repeats a lane when the page boundary lane leaves or changes', async () => {
    const throttle = ctx.sluice.throttle('idx2', { ratePerSecond: 0.001, capacity: 100 });
    for (let i = 0; i < 30; i++) expect((await throttle.submit(`k${String(i).padStart(2, '0')}`, 0)).admitted).toBe(true);
    const scripts = new ScriptRegistry(ctx.sluice.redis);
    let changed = 0;
    const seen = await allPages(scripts, throttle, 4, async (last) => {
      // After each page, the lane the cursor names changes: it leaves the index, or it gets deeper.
      if (changed++ % 2 === 0) await ctx.sluice.redis.zrem(throttle.keys.busy, last);
      else await ctx.sluice.redis.zadd(throttle.keys.busy, 50, last);
    });
    expect(seen).toHaveLength(30);
    expect(new Set(seen.map((l) => l.lane)).size).toBe(30);
    // The index itself is as the test left it, not as the paging script found it on the way.
    expect(changed).toBe(7);
    expect(await ctx.sluice.redis.zcard(throttle.keys.busy)).toBe(30 - 4);
    expect(await ctx.sluice.redis.zcount(throttle.keys.busy, 50, 50)).toBe(3);
  });
});

describe('lane detail, pause and resume', () => {
  it('shows depth, limits, queued jobs in start order, and a pause until a time', async () => {
    const throttle = ctx.sluice.throttle('detail', { ratePerSecond: 2, capacity: 10 });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await throttle.submit('acme', i);
      if (r.admitted) ids.push(r.jobId);
    }
    const d = await laneDetail(ctx.sluice.redis, throttle, 'acme');
    expect(d).not.toBeNull();
    expect(d!.depth).toBe(3);
    expect(d!.jobs).toBe(3);
    expect(d!.limits).toEqual({ ratePerSecond: 2, capacity: 10, burst: 0, maxWaitMs: 0 });
    expect(d!.queued.map((q) => q.id)).toEqual(ids);
    const starts = d!.queued.map((q) => q.predictedStartAtMs);
    expect(starts[1]! - starts[0]!).toBeGreaterThanOrEqual(500);
    expect(await laneDetail(ctx.sluice.redis, throttle, 'nobody')).toBeNull();

    const now = Date.now();
    const resumes = await pauseLane(throttle, 'acme', now + 60_000, now);
    expect(Math.abs(resumes - (now + 60_000))).toBeLessThan(1_000);
    const paused = await laneDetail(ctx.sluice.redis, throttle, 'acme');
    expect(paused!.pausedUntilMs).toBe(resumes);
    // A submit into a paused lane is predicted after the pause.
    const late = await throttle.submit('acme', 'late');
    expect(late.admitted && late.startsAtMs >= resumes).toBe(true);

    const scripts = new ScriptRegistry(ctx.sluice.redis);
    expect(await resumeLane(scripts, ctx.sluice.redis, throttle, 'acme')).toBe(resumes);
    const resumed = await laneDetail(ctx.sluice.redis, throttle, 'acme');
    expect(resumed!.pausedUntilMs).toBeUndefined();
    expect(resumed!.nextStartAtMs).toBeLessThan(Date.now() + 5_000);
    expect(await resumeLane(scripts, ctx.sluice.redis, throttle, 'acme')).toBe(0);
  });

  it("a lane held by a key quota without room shows its next start at the quota's reset", async () => {
    const throttle = ctx.sluice.throttle(`idx-quota-${Date.now()}`, { ratePerSecond: 100, capacity: 10, quotas: [{ scope: 'key', period: 'day', limit: 1, whenExhausted: 'defer' }] });
    for (const n of [1, 2]) expect((await throttle.submit('q', n)).admitted).toBe(true);
    // The first starts (its call counts); the second waits for the next window.
    expect((await throttle.gateLanes.dispatch(100)).jobs).toHaveLength(1);
    expect((await throttle.gateLanes.dispatch(100)).jobs).toHaveLength(0);
    const [quota] = await throttle.quotaUse('q');
    const d = await laneDetail(ctx.sluice.redis, throttle, 'q');
    expect(d!.nextStartAtMs).toBe(quota!.resetsAtMs);
    expect(d!.queued[0]!.predictedStartAtMs).toBe(quota!.resetsAtMs);
    expect((await throttle.lane('q')).nextStartAtMs).toBe(quota!.resetsAtMs);
  });
});
