// Getting a job through the outflow gate from a process: ask for a slot, wait for it here when it is
// near, hand it back when this process fell behind, and say when the job should rather go back to
// its queue. Shared by workers and by in-process schedule().
import type { ThrottleTiming } from './config.js';
import type { LaneScripts } from './lane-scripts.js';
import { redisClock, wallMs } from './redis-clock.js';
import { sleep } from './sleep.js';

/** What passGate resolves with: what the start ran, or a wait too long to spend holding the job here. */
export type GateOutcome<R> = { started: true; slotUs: number; lateMs: number; result: R } | { started: false; waitMs: number };

/**
 * Loops on the gate until the job may start, then calls `start` at its slot. `holdFor(ms)` decides
 * whether a wait of `ms` is spent here (true) or ends the loop (false: the caller re-queues the job):
 * workers re-queue waits longer than the fetch-ahead time, schedule() never does. `enter` is awaited
 * just before the start (a worker's handler-concurrency slot); if the job is then later than the
 * lateness tolerance, the start is handed back and the loop goes on. The check and `start` run in one
 * synchronous step, so nothing can make the job later between them.
 */
export async function passGate<R>(
  lanes: LaneScripts,
  laneId: string,
  jobId: string,
  cost: number,
  timing: ThrottleTiming,
  holdFor: (ms: number) => boolean,
  start: (slotUs: number, lateMs: number) => R,
  enter: () => Promise<void> = () => Promise.resolve(),
  exit: () => void = () => undefined,
): Promise<GateOutcome<R>> {
  let held: number | undefined;
  for (;;) {
    const sent = wallMs();
    const gate = await lanes.start(laneId, jobId, cost, held);
    redisClock.sample(sent, gate.nowUs);
    held = undefined;
    // Redis µs -> this process's performance.now() ms, through the clock offset learnt from all
    // replies: a reply read late (busy event loop) makes the job late, and that lateness is seen.
    const local = (us: number) => redisClock.toLocal(us) - performance.timeOrigin;
    if (!gate.go) {
      const waitMs = local(gate.wakeUs) - performance.now();
      if (!holdFor(waitMs)) return { started: false, waitMs };
      await sleep(waitMs);
      continue;
    }
    const startAt = local(gate.startUs);
    await sleep(startAt - performance.now());
    await enter();
    const lateMs = performance.now() - startAt;
    if (lateMs > timing.lateToleranceUs / 1000) {
      // Starting now could crowd the lane's next start: give the start back and get one that does not.
      exit();
      held = gate.startUs;
      continue;
    }
    return { started: true, slotUs: gate.startUs, lateMs: Math.max(0, lateMs), result: start(gate.startUs, Math.max(0, lateMs)) };
  }
}
