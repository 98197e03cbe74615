// schedule() calls wait in their process for the start of their in-process job, which any process's
// dispatcher may hand out. A process finds the ones another process handed out by reading the
// dispatched set after each round (src/throttle/dispatcher.ts lookForWaiters): only the entries handed
// out since its previous look, the waiters that came since by their entry, and every waiter now and then.
// Here the waiting process's own rounds hand out nothing (its round answers an empty round at Redis
// time), and a second sluice instance hands the jobs out with the real dispatch script: every waiter
// gets exactly the start it was given, whether its job was handed out before or after it came.
import { describe, expect, it } from 'vitest';
import { Dispatcher } from '../../../src/throttle/dispatcher.js';
import type { DispatchReply } from '../../../src/throttle/lane-scripts.js';
import { useBackend } from '../../helpers/fixtures.js';

describe('schedule() waiters whose jobs another process hands out', () => {
  const ctx = useBackend('single');

  it('each waiter resolves with the start given, handed out before it came or after, across many rounds', async () => {
    const name = 'waiters';
    const config = { ratePerSecond: 1000, capacity: 1000 };
    // Two instances on the same keys: this process and another.
    const here = ctx.backend.sluice({ prefix: 'sw' });
    const waiting = here.throttle(name, config);
    const other = ctx.backend.sluice({ prefix: 'sw' }).throttle(name, config);
    const redisNowUs = async () => {
      const [s, us] = await here.redis.time();
      return Number(s) * 1e6 + Number(us);
    };
    // This process's rounds hand nothing out: the jobs are the other process's to hand out.
    let rounds = 0;
    const emptyRounds = {
      dispatch: async (): Promise<DispatchReply> => {
        rounds++;
        return { nowUs: await redisNowUs(), nextUs: 0, jobs: [] };
      },
    };
    const dispatcher = new Dispatcher({ lanes: emptyRounds as never, keys: waiting.keys, client: here.redis, horizonUs: waiting.timing.leadUs });
    dispatcher.acquire();
    const roundsFrom = async (n: number) => {
      const until = rounds + n;
      while (rounds < until) await new Promise((r) => setTimeout(r, 2));
    };
    // A waiter whose job never comes, then two rounds: the first look at every waiter (FULL_LOOK_MS) is
    // behind us, so what follows is found by the looks at the rounds' new hand-outs and new waiters.
    const never = 'pnever|1|kx';
    void dispatcher.waitFor(never);
    await roundsFrom(2);
    try {
      const admit = async (i: number) => {
        const jobId = `pw${i}`;
        const lane = `k${i % 7}`;
        expect((await waiting.gateLanes.admit(lane, jobId, 1, false, '')).kind).toBe('admitted');
        return `${jobId}|1|${lane}`;
      };
      const given = new Map<string, number>();
      const handOut = async () => {
        const reply = await other.gateLanes.dispatch(256, '');
        for (const j of reply.jobs) given.set(`${j.jobId}|1|${j.laneId}`, j.startUs);
        return reply.jobs.length;
      };
      // Handed out before their waiters came (looked up by entry when they come).
      const early = await Promise.all(Array.from({ length: 20 }, (_, i) => admit(i)));
      expect(await handOut()).toBe(20);
      // Their waiters come after their starts and after later rounds' looks: only their entries find them.
      await new Promise((r) => setTimeout(r, 100));
      const got = new Map<string, Promise<number>>();
      for (const e of early) got.set(e, dispatcher.waitFor(e));
      // Waiting first, handed out later over several rounds of the other process (read from the set).
      for (let round = 0; round < 5; round++) {
        const late = await Promise.all(Array.from({ length: 40 }, (_, i) => admit(100 + round * 40 + i)));
        for (const e of late) got.set(e, dispatcher.waitFor(e));
        await new Promise((r) => setTimeout(r, 30));
        expect(await handOut()).toBe(40);
      }
      const startedAt = performance.now();
      const starts = await Promise.all([...got].map(async ([e, p]) => [e, await p] as const));
      // Found by the looks after the rounds, before the next look at every waiter (2 s after the first).
      expect(performance.now() - startedAt).toBeLessThan(1_000);
      expect(starts.length).toBe(220);
      for (const [entry, startUs] of starts) expect(startUs, entry).toBe(given.get(entry));
    } finally {
      dispatcher.forget(never);
      await dispatcher.close();
    }
  });
});
