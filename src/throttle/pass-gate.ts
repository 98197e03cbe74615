// Getting a job through the outflow gate from a process: ask for the job's start (the one the
// dispatcher gave it, or a fresh one when it missed it), wait for that instant here, and say when the
// job went back to its lane instead. Shared by workers and by in-process schedule().
import type { ThrottleTiming } from './config.js';
import type { LaneScripts, StartMode } from './lane-scripts.js';
import { redisClock, wallMs } from './redis-clock.js';
import { sleep } from './sleep.js';

/** What passGate resolves with: what the start ran, or that the job is back in its lane (park it). */
export type GateOutcome<R> = { started: true; slotUs: number; lateMs: number; result: R } | { started: false };

/**
 * Asks the gate for the job's start and calls `start` at that instant. `enter` is awaited just before
 * the start (a worker's handler-concurrency slot); if the job is then later than the lateness
 * tolerance, the start is handed back and the gate gives a fresh one (or sends the job back to its
 * lane). The check and `start` run in one synchronous step, so nothing can make the job later between them.
 */
export async function passGate<R>(
  lanes: LaneScripts,
  laneId: string,
  jobId: string,
  cost: number,
  timing: ThrottleTiming,
  start: (slotUs: number, lateMs: number) => R,
  enter: () => Promise<void> = () => Promise.resolve(),
  exit: () => void = () => undefined,
): Promise<GateOutcome<R>> {
  let how: StartMode = { mode: 'start' };
  for (;;) {
    const sent = wallMs();
    const gate = await lanes.start(laneId, jobId, cost, how);
    redisClock.sample(sent, gate.nowUs);
    if (!gate.go) return { started: false };
    // Redis µs -> this process's performance.now() ms, through the clock offset learnt from all
    // replies: a reply read late (busy event loop) makes the job late, and that lateness is seen.
    const startAt = redisClock.toLocal(gate.startUs) - performance.timeOrigin;
    await sleep(startAt - performance.now());
    await enter();
    const lateMs = performance.now() - startAt;
    if (lateMs > timing.lateToleranceUs / 1000) {
      // Starting now could crowd the starts given after this one: hand it back for one that does not.
      exit();
      how = { mode: 'late', heldUs: gate.startUs };
      continue;
    }
    return { started: true, slotUs: gate.startUs, lateMs: Math.max(0, lateMs), result: start(gate.startUs, Math.max(0, lateMs)) };
  }
}
