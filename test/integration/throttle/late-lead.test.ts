// A late job whose gate replies come back slower than its fresh start's lead: each of its late calls asks
// for twice the lead of the one before (src/throttle/pass-gate.ts lateLeadUs), up to twice the delivery
// time, so it starts once the lead covers the round trip. With the same 3 ms lead every time, a reply
// that takes longer than that plus the lateness tolerance found the job late again at every fresh start,
// and it never started. Real Redis; the replies are held back here, as a slow network would.
import { describe, expect, it } from 'vitest';
import { lateLeadUs, passGate } from '../../../src/throttle/pass-gate.js';
import type { LaneScripts, StartMode } from '../../../src/throttle/lane-scripts.js';
import { useBackend } from '../../helpers/fixtures.js';

const REPLY_DELAY_MS = 20;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a late job with slow gate replies', () => {
  const ctx = useBackend('single');

  it('asks for a longer lead at each late call and starts once the lead covers the round trip', async () => {
    const throttle = ctx.sluice.throttle('late-lead', { ratePerSecond: 100, capacity: 10 });
    const t = throttle.timing;
    expect([0, 1, 2, 3, 4, 10].map((n) => lateLeadUs(t, n))).toEqual([3_000, 6_000, 12_000, 20_000, 20_000, 20_000]);

    const lanes = throttle.gateLanes;
    const submitted = await throttle.submit('k', { n: 1 });
    if (!submitted.admitted) throw new Error('not admitted');
    const jobId = submitted.jobId;
    const laneId = throttle.keys.laneId('k');
    const round = await lanes.dispatch(8);
    expect(round.jobs.map((j) => j.jobId)).toEqual([jobId]);

    const leads: (number | undefined)[] = [];
    const slow = Object.create(lanes) as LaneScripts;
    slow.start = async (laneId: string, jobId: string, cost: number, how?: StartMode) => {
      if (how?.mode === 'late') leads.push(how.leadUs);
      // Without the longer leads this job would ask for ever: give up after a dozen calls.
      if (leads.length > 12) throw new Error('late again at every fresh start');
      const reply = await lanes.start(laneId, jobId, cost, how);
      await sleep(REPLY_DELAY_MS);
      return reply;
    };
    const outcome = await passGate(slow, laneId, jobId, 1, t, (slotUs, lateMs) => ({ slotUs, lateMs }));
    expect(outcome.started).toBe(true);
    // The first answer came 20 ms after Redis gave it, past the dispatched start plus the tolerance; then
    // leads of 3, 6 and 12 ms fell short of the 20 ms round trip, and 20 ms covered it.
    expect(leads.slice(0, 3)).toEqual([3_000, 6_000, 12_000]);
    expect(leads.every((l, i) => l === lateLeadUs(t, i))).toBe(true);
    expect(leads.length).toBeLessThanOrEqual(5);
  });
});
