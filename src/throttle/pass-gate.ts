// Getting a job through the outflow gate from a process: ask for the job's start (the one the
// dispatcher gave it, or a fresh one when it missed it), wait for that instant here, and say when the
// job went back to its lane instead. Shared by workers and by in-process schedule().
import type { ThrottleTiming } from './config.js';
import type { LaneScripts, StartMode, StartReply } from './lane-scripts.js';
import { redisClock, wallMs } from './redis-clock.js';
import { sleep } from './sleep.js';
import { untilStart } from './start-clock.js';

/** Between two gate calls refused because the throttle's slot is being migrated (ms). */
const MIGRATING_RETRY_MS = 100;
/** How long a job keeps asking while its slot moves before its processor fails as before (ms). */
const MIGRATING_GIVE_UP_MS = 60_000;

/**
 * True for the error of a script call that a cluster redirected instead of running: TRYAGAIN (a
 * multi-key call while a slot's keys are split between two nodes, for the whole migration), or MOVED /
 * ASK (the slot changing owner), also as the last error ioredis gives after following redirections up to
 * its limit. The script did not run, so asking again is safe.
 */
export function slotMigrating(error: unknown): boolean {
  const message = error instanceof Error ? error.message : '';
  return /^(TRYAGAIN|MOVED |ASK |Too many Cluster redirections)/.test(message);
}

/**
 * What passGate resolves with: what the start ran, or that the job is back in its lane (park it, then
 * requeue it with `slotUs`, the start it had, if any).
 */
export type GateOutcome<R> = { started: true; slotUs: number; lateMs: number; result: R } | { started: false; slotUs?: number | undefined };

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
  let migratingSince: number | undefined;
  for (;;) {
    const sent = wallMs();
    const gate: StartReply | undefined = await lanes.start(laneId, jobId, cost, how).catch((error: unknown) => {
      if (!slotMigrating(error) || performance.now() - (migratingSince ??= performance.now()) > MIGRATING_GIVE_UP_MS) throw error;
      return undefined;
    });
    if (!gate) {
      // The throttle's slot is being moved to another master: the script did not run. The job keeps
      // its place and asks again, instead of failing an admitted job (a big slot moves for seconds).
      await sleep(MIGRATING_RETRY_MS);
      continue;
    }
    redisClock.sample(sent, gate.nowUs);
    if (!gate.go && gate.askAtUs !== undefined) {
      // Its start was moved more than a horizon ahead (a late job of its lane moved it): asked again a
      // horizon before it, so that a pause set meanwhile still holds it.
      await sleep(redisClock.toLocal(gate.askAtUs - timing.leadUs) - performance.timeOrigin - performance.now());
      continue;
    }
    if (!gate.go) return { started: false, slotUs: gate.slotUs };
    // Redis µs -> this process's performance.now() ms, through the clock offset learnt from all
    // replies: a reply read late (busy event loop) makes the job late, and that lateness is seen.
    const startAt = redisClock.toLocal(gate.startUs) - performance.timeOrigin;
    // In start order with the process's other jobs (start-clock.ts): a lane's jobs take the handler
    // slots in its order.
    await untilStart(startAt);
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
