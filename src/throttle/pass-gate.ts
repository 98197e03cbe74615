// Getting a job through the outflow gate from a process: ask for the job's start (the one the
// dispatcher gave it, or a fresh one when it missed it), wait for that instant here, and say when the
// job went back to its lane instead. Shared by workers and by in-process schedule().
import type { ThrottleTiming } from './config.js';
import { HeldStart, HeldStarts } from './held-starts.js';
import { laneMember } from './keys.js';
import type { LaneScripts, StartMode, StartReply } from './lane-scripts.js';
import { redisClock, wallMs } from './redis-clock.js';
import { sleep } from './sleep.js';
import { untilStart } from './start-clock.js';

/** Between two gate calls refused because the throttle's slot is being migrated (ms). */
const MIGRATING_RETRY_MS = 100;
/** How long a job keeps asking while its slot moves before its processor fails as before (ms). */
const MIGRATING_GIVE_UP_MS = 60_000;
/** The most held jobs a late call names (lua/throttle-start.lua MAX_MOVED: it moves no more). */
const MAX_NAMED = 64;

/**
 * The lead of a job's n-th late call (n from 0): the timing's late lead, doubled for each late call of
 * the same job before it, up to the delivery time. A fresh start 3 ms on is enough when the reply comes
 * back within the lead plus the lateness tolerance; with a slower round trip (a Redis further away, a
 * busy process) the job would be late again at every fresh start, for ever. Doubling finds a lead that
 * the round trip fits in after a few calls, and costs nothing when the first one does.
 */
export function lateLeadUs(timing: ThrottleTiming, n: number): number {
  return Math.min(timing.lateLeadUs * 2 ** n, Math.max(timing.lateLeadUs, timing.deliveryUs * 2));
}

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
 * `held`: this process's held jobs (held-starts.ts): a late job's fresh start moves the lane's later jobs
 * held here with it, so that a process slower than the lane keeps the lane's order.
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
  held: HeldStarts = new HeldStarts(),
): Promise<GateOutcome<R>> {
  let migratingSince: number | undefined;
  /** One gate call; undefined while the throttle's slot is being moved to another master. */
  const ask = async (how: StartMode): Promise<StartReply | undefined> => {
    const sent = wallMs();
    const gate = await lanes.start(laneId, jobId, cost, how).catch((error: unknown) => {
      if (!slotMigrating(error) || performance.now() - (migratingSince ??= performance.now()) > MIGRATING_GIVE_UP_MS) throw error;
      return undefined;
    });
    if (gate) redisClock.sample(sent, gate.nowUs);
    return gate;
  };
  // Held from its first call on: a late call of its lane made meanwhile names it (held-starts.ts).
  const mine = new HeldStart(laneId, laneMember(jobId, cost));
  /** This job's late calls so far (each next one asks for a longer lead: lateLeadUs). */
  let lateCalls = 0;
  held.hold(mine);
  try {
    let gate = await ask({ mode: 'start' });
    for (;;) {
      if (!gate) {
        // The throttle's slot is being moved to another master: the script did not run. The job keeps
        // its place and asks again, instead of failing an admitted job (a big slot moves for seconds).
        await sleep(MIGRATING_RETRY_MS);
        gate = await ask(mine.startUs !== undefined ? { mode: 'late', heldUs: mine.startUs } : { mode: 'start' });
        continue;
      }
      if (!gate.go && gate.askAtUs !== undefined) {
        // Its start was moved more than a horizon ahead (a late job of its lane moved it): asked again a
        // horizon before it, so that a pause set meanwhile still holds it.
        await sleep(redisClock.toLocal(gate.askAtUs - timing.leadUs) - performance.timeOrigin - performance.now());
        gate = await ask({ mode: 'start' });
        continue;
      }
      if (!gate.go) return { started: false, slotUs: gate.slotUs };
      mine.startUs = gate.startUs;
      // Until its instant (in start order with the process's other jobs, start-clock.ts: a lane's jobs
      // take the handler slots in its order), then a handler slot; again when a late job of its lane
      // moved its start meanwhile.
      for (;;) {
        const at: number = mine.startUs;
        // Redis µs -> this process's performance.now() ms, through the clock offset learnt from all
        // replies: a reply read late (busy event loop) makes the job late, and that lateness is seen.
        // Worked out once: the lateness below is measured from the instant it waited for.
        const startAt = redisClock.toLocal(at) - performance.timeOrigin;
        await untilStart(startAt);
        if (mine.moving) await mine.moving;
        if (mine.startUs !== at) continue;
        await enter();
        if (mine.moving || mine.startUs !== at) {
          exit();
          continue;
        }
        const lateMs = performance.now() - startAt;
        if (lateMs <= timing.lateToleranceUs / 1000) {
          held.drop(mine);
          return { started: true, slotUs: at, lateMs: Math.max(0, lateMs), result: start(at, Math.max(0, lateMs)) };
        }
        // Starting now could crowd the starts given after this one: hand it back for one that does not,
        // with the lane's later jobs held here, which move with it when they can.
        exit();
        const leadUs = lateLeadUs(timing, lateCalls++);
        const reply = await held.lateCall(mine, MAX_NAMED, (named) => ask({ mode: 'late', heldUs: at, held: named, leadUs }));
        // A late call of its lane out meanwhile moved it: it waits for its new start.
        if (reply === 'moved') continue;
        gate = reply;
        break;
      }
    }
  } finally {
    held.drop(mine);
  }
}
