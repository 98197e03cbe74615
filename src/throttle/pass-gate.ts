// Getting a job through the outflow gate from a process: ask for a slot, wait for it here when it is
// near, hand it back when this process fell behind, and say when the job should rather go back to
// its queue. Shared by workers and by in-process schedule().
import type { ThrottleTiming } from './config.js';
import type { LaneScripts } from './lane-scripts.js';
import { redisClock, wallMs } from './redis-clock.js';
import { sleep } from './sleep.js';

/** What passGate resolves with: the start instant reached, or a wait too long to spend holding the job here. */
export type GateOutcome = { started: true; slotUs: number; lateMs: number } | { started: false; waitMs: number };

/**
 * Loops on the gate until the job may start, then resolves right at its slot. `holdFor(ms)` decides
 * whether a wait of `ms` is spent here (resolve undefined: keep holding) or ends the loop (the caller
 * re-queues the job): workers re-queue waits longer than the fetch-ahead time, schedule() never does.
 * `enter` is awaited just before the start (a worker's handler-concurrency slot); if taking it made the
 * job miss its slot by more than the lateness tolerance, the slot is handed back and the loop goes on.
 */
export async function passGate(
  lanes: LaneScripts,
  laneId: string,
  jobId: string,
  cost: number,
  timing: ThrottleTiming,
  holdFor: (ms: number) => Promise<GateOutcome | undefined>,
  enter: () => Promise<void> = () => Promise.resolve(),
  exit: () => void = () => undefined,
): Promise<GateOutcome> {
  let held: number | undefined;
  for (;;) {
    const gate = await lanes.start(laneId, jobId, cost, held);
    redisClock.sample(gate.nowUs, wallMs());
    held = undefined;
    // Redis µs -> this process's performance.now() ms, through the clock offset learnt from all
    // replies: a reply read late (busy event loop) makes the job late, and that lateness is seen.
    const local = (us: number) => redisClock.toLocal(us) - performance.timeOrigin;
    if (!gate.go) {
      const waitMs = local(gate.wakeUs) - performance.now();
      const outcome = await holdFor(waitMs);
      if (outcome) return outcome;
      await sleep(waitMs);
      continue;
    }
    const startAt = local(gate.startUs);
    await sleep(startAt - performance.now());
    await enter();
    if (performance.now() - startAt > timing.lateToleranceUs / 1000) {
      // Starting now could crowd the lane's next start: give the slot back and take the next usable one.
      exit();
      held = gate.startUs;
      continue;
    }
    return { started: true, slotUs: gate.startUs, lateMs: Math.max(0, performance.now() - startAt) };
  }
}
