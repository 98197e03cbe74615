// An operator's override meets processes that have not seen it yet (each polls the control state every
// 250 ms): their admissions and their workers' calls must not put the replaced interval back into the
// lane, or its queued work goes on at the old rate until the next admission. Real Redis, injected times;
// 'p'-prefixed job ids are in-process jobs (no BullMQ job to wait for).
import { describe, expect, it } from 'vitest';
import { ScriptRegistry } from '../../../src/redis/scripts.js';
import { timingOf } from '../../../src/throttle/config.js';
import { LaneScripts } from '../../../src/throttle/lane-scripts.js';
import { useBackend } from '../../helpers/fixtures.js';

const ctx = useBackend('single');
const T0 = 1_700_000_000_000_000;

describe('a lane override and the processes that have not seen it yet', () => {
  it('stale admissions and stale hand-backs keep the override; a newer change replaces it; an older one arriving late does not', async () => {
    const throttle = ctx.sluice.throttle('stale-view', { ratePerSecond: 20, capacity: 100 });
    const scripts = new ScriptRegistry(ctx.backend.raw);
    // A process's lane scripts at `ratePerSecond`, its view of the overrides at `version`.
    const at = (ratePerSecond: number, version: number) => new LaneScripts(scripts, throttle.keys, timingOf({ ...throttle.config, ratePerSecond }), 100, 0, () => version);
    const stale = at(20, 0);
    const pacing = async () => ctx.backend.raw.hmget(throttle.keys.lane('acme'), 'i', 'ov');
    for (let i = 0; i < 4; i++) expect((await stale.admit('acme', `p${i}`, 1, false, String(T0))).kind).toBe('admitted');
    expect(await pacing()).toEqual(['50000', null]);

    // The override (2/s) made at control version 1.
    expect(await at(2, 1).setLimits('acme', 1)).toBe(true);
    expect(await pacing()).toEqual(['500000', '1']);
    // An admission by a process still at version 0 (and 20/s) keeps it, and is predicted at it.
    const admitted = await stale.admit('acme', 'p4', 1, false, String(T0 + 1000));
    expect(admitted.kind).toBe('admitted');
    expect(await pacing()).toEqual(['500000', '1']);
    // A job handed out, then sent back by a worker still at version 0: the lane keeps the override.
    const round = await stale.dispatch(10, String(T0 + 2000));
    expect(round.jobs.map((j) => j.jobId)).toEqual(['p0']);
    expect((await stale.start('acme', 'p0', 1, { mode: 'requeue', slotUs: round.jobs[0]!.startUs }, String(T0 + 3000))).go).toBe(false);
    expect(await pacing()).toEqual(['500000', '1']);
    // The dispatcher hands the lane out at the override's pace: 500 ms apart.
    const starts: number[] = [];
    for (let now = T0 + 3000; starts.length < 3 && now < T0 + 3_000_000; now += 10_000) {
      for (const j of (await stale.dispatch(10, String(now))).jobs) starts.push(j.startUs);
    }
    expect(starts).toHaveLength(3);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(500_000);

    // The override removed at version 2 (back to 20/s): the lane follows it, and so do admissions at version 2.
    expect(await at(20, 2).setLimits('acme', 2)).toBe(true);
    expect(await pacing()).toEqual(['50000', '2']);
    // The change of version 1 arriving after it (a slow admin call) is not applied.
    expect(await at(2, 1).setLimits('acme', 1)).toBe(false);
    expect(await pacing()).toEqual(['50000', '2']);
    // A process at version 2 with other limits (its plan changed) writes them.
    expect((await at(10, 2).admit('acme', 'p9', 1, false, String(T0 + 4_000_000))).kind).toBe('admitted');
    expect(await pacing()).toEqual(['100000', '2']);
  });

  it('an override of a lane with no state yet holds for the admissions that follow it', async () => {
    const throttle = ctx.sluice.throttle('stale-new', { ratePerSecond: 20, capacity: 100 });
    const scripts = new ScriptRegistry(ctx.backend.raw);
    const at = (ratePerSecond: number, version: number) => new LaneScripts(scripts, throttle.keys, timingOf({ ...throttle.config, ratePerSecond }), 100, 0, () => version);
    expect(await at(2, 7).setLimits('fresh', 7)).toBe(false);
    // Kept a while (far longer than a poll interval), not for ever.
    const ttl = await ctx.backend.raw.pttl(throttle.keys.lane('fresh'));
    expect(ttl).toBeGreaterThan(1000);
    expect(ttl).toBeLessThanOrEqual(10_000);
    const first = await at(20, 6).admit('fresh', 'pa', 1, false, String(T0));
    const second = await at(20, 6).admit('fresh', 'pb', 1, false, String(T0));
    expect(first.kind === 'admitted' && second.kind === 'admitted' ? second.startUs - first.startUs : -1).toBeGreaterThanOrEqual(500_000);
    expect(await ctx.backend.raw.hmget(throttle.keys.lane('fresh'), 'i', 'ov')).toEqual(['500000', '7']);
    // Now a lane with work: no expiry.
    expect(await ctx.backend.raw.pttl(throttle.keys.lane('fresh'))).toBe(-1);
  });
});
