// The one level that turns lane operations into script calls (lua/throttle-*.lua), and their replies
// into typed results. Times in replies are Redis µs.
import { SluiceError, isSluiceError } from '../errors.js';
import { Deadline, deadlineError } from '../redis/deadline.js';
import { integerArray, integerReply } from '../redis/reply.js';
import { argvOf, type ScriptArg } from '../redis/script-table.js';
import type { ManyKeyCall, ScriptRegistry } from '../redis/scripts.js';
import type { ThrottleTiming } from './config.js';
import { EVENT_STREAM_MAXLEN, type JobEventDetail } from './events.js';
import { laneMember, type ThrottleKeys } from './keys.js';

/**
 * A lane whose head job is admitted but not added to BullMQ yet (its submitter's add is a moment
 * behind) is looked at again this long after (µs): short, since a new lane's first start waits for it.
 */
const MISSING_RETRY_US = 3_000;

export type AdmitReply =
  | { kind: 'admitted'; startUs: number; position: number; nowUs: number }
  | { kind: 'queued-duplicate'; startUs: number; position: number; nowUs: number }
  | { kind: 'finished-duplicate'; nowUs: number }
  | { kind: 'queue_full'; retryUs: number; depth: number; nowUs: number }
  | { kind: 'wait_too_long'; retryUs: number; waitUs: number; depth: number; nowUs: number }
  | { kind: 'quota_exhausted'; retryUs: number; depth: number; nowUs: number; quota: number };

/**
 * The BullMQ delayed job a submit's admission writes with it (lua/includes/bull-park.lua), as JSON
 * pieces around what only the script knows (the predicted start, the position).
 */
export interface Park {
  /** The BullMQ job name. */
  name: string;
  /** The job data JSON up to the predicted start: `{"l":<lane>,"c":<cost>,"p":<payload>`. */
  dataHead: string;
  /** The rest of the data JSON after `,"s":<ms>`, with the closing brace. */
  dataTail: string;
  /** The job options JSON after `{"jobId":"<id>"`, with the closing brace. */
  optsTail: string;
  parkMs: number;
  /** The 'admitted' event's detail JSON up to `,"startsAtMs":`. */
  eventHead: string;
  eventMaxLen: number;
}

/** A worker's answer from the gate: start at `startUs`, or the job went back to its lane (park it). */
/** `askAtUs`: no answer yet, ask again a horizon before it (a start a late job's move put more than a horizon ahead). */
/** `shiftUs`: the late job's `held` members (StartMode) all moved by this much with it. */
export type StartReply = { go: true; startUs: number; nowUs: number; shiftUs?: number } | { go: false; slotUs?: number; askAtUs?: number; nowUs: number };

/** What one dispatch round handed out. */
export interface DispatchReply {
  nowUs: number;
  /** Redis µs from which the next start is due within the horizon (0: nothing queued). */
  nextUs: number;
  jobs: { jobId: string; laneId: string; startUs: number }[];
}

/** How a worker asks the gate: a job just taken, a job that missed its start, a job sent back, a job about to be parked after its start (`mark`). */
/**
 * `requeue`'s `slotUs`: the start the job was given (it orders the job among those sent back); none for a
 * retry. `callMade`: the job started and made its call (the upstream said "later"): the spend quotas keep
 * counting it; otherwise what the dispatcher counted for `slotUs` is given back.
 */
/**
 * `late`'s `held`: members of the lane's later jobs this process holds (told their starts, none to start
 * before the reply): they may move with the late job, which keeps the lane's order (lua/throttle-start.lua).
 * `leadUs`: its fresh start no sooner than this after now (default: the timing's lateLeadUs).
 */
export type StartMode = { mode: 'start' } | { mode: 'late'; heldUs: number; held?: readonly string[]; leadUs?: number } | { mode: 'requeue'; slotUs?: number | undefined; callMade?: boolean } | { mode: 'mark' };

export interface LaneState {
  slotUs: number;
  depth: number;
  jobs: number;
  nowUs: number;
}

export class LaneScripts {
  constructor(
    private readonly scripts: ScriptRegistry,
    private readonly keys: ThrottleKeys,
    private readonly timing: ThrottleTiming,
    private readonly capacity: number,
    private readonly burst: number,
    /** The control version this process's view of operators' overrides is at (0: it follows none). */
    private readonly controlVersion: () => number,
  ) {
    this.scheduleKeys = dispatchKeys(keys);
  }

  /** The dispatch script's keys, BullMQ's delayed set and marker among them (made once). */
  private readonly scheduleKeys: ReturnType<typeof dispatchKeys>;

  /**
   * `plan`: the lane's plan name, kept in the lane for the admin view ('' = none). The admissions of
   * one turn of the event loop go to Redis as one script call (one node; each admission still atomic
   * and in issue order, docs/decisions/batched-admissions.md). `park`: write the job with the
   * admission (a submit); without it the member alone is admitted and indexed for lane repair (a
   * readmit's job exists already, a schedule() call has none). `deadline`: the call is answered with
   * SLUICE_ERR_REDIS_UNAVAILABLE after `ms` and, if not sent by then, never sent; without one it waits.
   */
  admit(
    laneId: string,
    jobId: string,
    cost: number,
    idempotent: boolean,
    now: string,
    plan = '',
    park?: Park,
    deadline?: { ms: number; what: string },
  ): Promise<AdmitReply> {
    const t = this.timing;
    const k = this.keys;
    // Positional, in the order of the script table's 'throttle-admit' (src/redis/script-table.ts): the hot
    // path of every submit, built without the by-name mapping.
    const keys = [
      k.lane(laneId),
      k.laneQueue(laneId),
      k.busy,
      k.job(jobId),
      k.pending,
      k.waiting,
      k.global,
      k.wake,
      k.laneOutgoing(laneId),
      this.scheduleKeys.delayed,
      k.events,
      k.dispatched,
    ];
    const args: ScriptArg[] = [
      now,
      jobId,
      cost,
      this.capacity,
      t.laneIntervalUs,
      this.burst,
      t.globalIntervalUs,
      t.maxWaitUs,
      laneId,
      t.marginPpm,
      idempotent ? 1 : 0,
      t.enqueueByUs,
      plan,
      t.quotas.arg(now),
      this.controlVersion(),
    ];
    if (park) args.push(1, park.name, park.dataHead, park.dataTail, park.optsTail, park.parkMs, park.eventHead, park.eventMaxLen);
    return new Promise((resolve, reject) => {
      this.scripts.submitMany('throttle-admit', new AdmitCall(keys, args, resolve, reject, deadline));
    });
  }

  /**
   * The outflow gate, asked by a worker that took a job: its dispatched start, a fresh start for a job
   * that missed its own, or (reply go: false) the job is back at the head of its lane.
   */
  async start(laneId: string, jobId: string, cost: number, how: StartMode = { mode: 'start' }, now = ''): Promise<StartReply> {
    const t = this.timing;
    const [go, at, nowUs, shiftUs] = integerArray(
      'throttle-start',
      await this.scripts.run(
        'throttle-start',
        {
          lane: this.keys.lane(laneId),
          laneQueue: this.keys.laneQueue(laneId),
          busy: this.keys.busy,
          global: this.keys.global,
          dispatched: this.keys.dispatched,
          waiting: this.keys.waiting,
          ready: this.keys.ready,
          wake: this.keys.wake,
          laneOutgoing: this.keys.laneOutgoing(laneId),
          laneBack: this.keys.laneBack(laneId),
          wait: this.scheduleKeys.wait,
          marker: this.scheduleKeys.marker,
        },
        {
          now,
          member: laneMember(jobId, cost),
          laneId,
          mode: how.mode,
          heldUs: how.mode === 'late' ? how.heldUs : how.mode === 'requeue' && how.slotUs ? how.slotUs : '',
          laneIntervalUs: t.laneIntervalUs,
          burst: this.burst,
          globalIntervalUs: t.globalIntervalUs,
          marginPpm: t.marginPpm,
          horizonUs: t.leadUs,
          lateLeadUs: how.mode === 'late' && how.leadUs !== undefined ? how.leadUs : t.lateLeadUs,
          lateToleranceUs: t.lateToleranceUs,
          quotas: t.quotas.arg(now),
          refund: how.mode === 'requeue' && !how.callMade ? 1 : 0,
          controlVersion: this.controlVersion(),
          held: how.mode === 'late' ? (how.held ?? []) : [],
        },
      ),
      3,
      4,
    ) as [number, number, number, number | undefined];
    if (go === 1) return shiftUs !== undefined ? { go: true, startUs: at, nowUs, shiftUs } : { go: true, startUs: at, nowUs };
    // A start moved more than a horizon ahead: ask again a horizon before it (lua/throttle-start.lua).
    if (go === 2) return { go: false, askAtUs: at, nowUs };
    return { go: false, ...(at > 0 ? { slotUs: at } : {}), nowUs };
  }

  /**
   * The job started at `startUs` (the gate's answer): its unit of the lane's capacity is free again
   * (lua/throttle-started.lua), and its 'started' event (`event`: the detail) is appended in the same call.
   * True when the unit was still held here (false: a second past its start an admission took it for
   * started, or the job had gone back to its lane).
   */
  async started(laneId: string, jobId: string, cost: number, startUs: number, event?: JobEventDetail): Promise<boolean> {
    const reply = await this.scripts.run(
      'throttle-started',
      { lane: this.keys.lane(laneId), laneOutgoing: this.keys.laneOutgoing(laneId), events: this.keys.events },
      { member: laneMember(jobId, cost), startUs, eventJobId: event ? jobId : '', eventDetail: event ? JSON.stringify(event) : '', eventMaxLen: EVENT_STREAM_MAXLEN },
    );
    return integerReply('throttle-started', reply) === 1;
  }

  /**
   * One dispatch round: the jobs whose start is due within the horizon, at most `maxJobs`, and with
   * `bound` at most `bound.maxOutstanding` less the jobs handed out and not taken yet (entries younger
   * than `bound.forgottenUs`): none when that many are out.
   */
  async dispatch(maxJobs: number, now = '', bound?: { maxOutstanding: number; forgottenUs: number }): Promise<DispatchReply> {
    const t = this.timing;
    const reply = await this.scripts.run(
      'throttle-dispatch',
      this.scheduleKeys,
      {
        now,
        horizonUs: t.leadUs,
        deliveryUs: t.deliveryUs,
        maxJobs,
        globalIntervalUs: t.globalIntervalUs,
        marginPpm: t.marginPpm,
        lanePrefix: this.keys.lanePrefix,
        jobPrefix: this.keys.jobPrefix,
        missingRetryUs: MISSING_RETRY_US,
        quotas: t.quotas.arg(now),
        maxOutstanding: bound?.maxOutstanding ?? 0,
        forgottenUs: bound?.forgottenUs ?? 0,
      },
    );
    if (!Array.isArray(reply) || reply.length < 3 || (reply.length - 3) % 3 !== 0) {
      throw new SluiceError('SLUICE_ERR_SCRIPT', `throttle-dispatch answered ${JSON.stringify(reply)}`);
    }
    const jobs: DispatchReply['jobs'] = [];
    for (let i = 3; i < reply.length; i += 3) jobs.push({ jobId: String(reply[i]), laneId: String(reply[i + 1]), startUs: Number(reply[i + 2]) });
    return { nowUs: Number(reply[1]), nextUs: Number(reply[2]), jobs };
  }

  /**
   * Sets a lane's interval and burst (an operator's override, made at control version `version`): the
   * dispatcher paces its queued work by them, and a process that has not seen that version yet neither
   * writes nor paces by its own (lua/includes/lane.lua lane_limits).
   */
  async setLimits(laneId: string, version: number): Promise<boolean> {
    const reply = await this.scripts.run(
      'throttle-limits',
      { lane: this.keys.lane(laneId), waiting: this.keys.waiting, ready: this.keys.ready },
      { laneIntervalUs: this.timing.laneIntervalUs, burst: this.burst, marginPpm: this.timing.marginPpm, laneId, controlVersion: version },
    );
    return integerReply('throttle-limits', reply) === 1;
  }

  /** Takes admitted members back out of the lane (their jobs were never enqueued). */
  async release(laneId: string, members: string[], now = ''): Promise<number> {
    return integerReply(
      'throttle-release',
      await this.scripts.run('throttle-release', { ...this.laneKeys(laneId), jobs: [] }, { now, laneId, mode: 'release', members }),
    );
  }

  /** Removes members whose BullMQ job does not exist (checked again inside the script). */
  async repair(laneId: string, members: string[]): Promise<number> {
    const jobKeys = members.map((m) => this.keys.job(m.slice(0, m.lastIndexOf('|'))));
    return integerReply(
      'throttle-release',
      await this.scripts.run('throttle-release', { ...this.laneKeys(laneId), jobs: jobKeys }, { now: '', laneId, mode: 'repair', members }),
    );
  }

  /** The keys every script that changes a lane takes. */
  private laneKeys(laneId: string) {
    return { lane: this.keys.lane(laneId), laneQueue: this.keys.laneQueue(laneId), busy: this.keys.busy, waiting: this.keys.waiting, ready: this.keys.ready };
  }

  /**
   * Charges (diff > 0) or refunds (diff < 0) the difference between a job's actual and admitted cost to
   * its lane's and the throttle's meters, and to the cost quotas of its start's window (`slotUs`);
   * returns both meters after (global 0: none).
   */
  async reconcile(laneId: string, diff: number, now = '', slotUs?: number): Promise<{ laneUs: number; globalUs: number }> {
    const t = this.timing;
    const [laneUs, globalUs] = integerArray(
      'throttle-reconcile',
      await this.scripts.run(
        'throttle-reconcile',
        { lane: this.keys.lane(laneId), laneOutgoing: this.keys.laneOutgoing(laneId), global: this.keys.global, waiting: this.keys.waiting, ready: this.keys.ready },
        { now, diff, laneIntervalUs: t.laneIntervalUs, globalIntervalUs: t.globalIntervalUs, marginPpm: t.marginPpm, horizonUs: t.leadUs, laneId, quotas: t.quotas.arg(now), slotUs: slotUs ?? '' },
      ),
      2,
    );
    return { laneUs: laneUs!, globalUs: globalUs! };
  }

  /** Holds the lane (or the whole throttle) for `ms` from now; returns the Redis µs at which starts resume. */
  async pause(laneId: string, ms: number, scope: 'lane' | 'global', now = ''): Promise<number> {
    return integerReply(
      'throttle-pause',
      await this.scripts.run(
        'throttle-pause',
        { lane: this.keys.lane(laneId), global: this.keys.global, waiting: this.keys.waiting, ready: this.keys.ready },
        { now, pauseUs: Math.round(ms * 1000), scope, laneId, marginPpm: this.timing.marginPpm },
      ),
    );
  }

  async state(laneId: string, now = ''): Promise<LaneState> {
    const [slotUs, depth, jobs, nowUs] = integerArray(
      'throttle-lane',
      await this.scripts.run('throttle-lane', { lane: this.keys.lane(laneId), laneQueue: this.keys.laneQueue(laneId), waiting: this.keys.waiting }, { now, laneId }),
      4,
    );
    return { slotUs: slotUs!, depth: depth!, jobs: jobs!, nowUs: nowUs! };
  }
}

/** The keys of lua/throttle-dispatch.lua: the throttle's schedule, and the BullMQ queue it hands jobs to. */
export function dispatchKeys(keys: ThrottleKeys) {
  const bull = keys.jobPrefix;
  return {
    waiting: keys.waiting,
    ready: keys.ready,
    global: keys.global,
    busy: keys.busy,
    dispatched: keys.dispatched,
    meta: `${bull}meta`,
    delayed: `${bull}delayed`,
    wait: `${bull}wait`,
    marker: `${bull}marker`,
    events: `${bull}events`,
  };
}

/** The reply of throttle-admit as a typed result. */
function admitReply(raw: unknown): AdmitReply {
  const reply = integerArray('throttle-admit', raw, 4, 5);
  const [code, a, b, nowUs, depth] = reply as [number, number, number, number, number | undefined];
  switch (code) {
    case 1:
      return { kind: 'admitted', startUs: a, position: b, nowUs };
    case 2:
      return { kind: 'queued-duplicate', startUs: a, position: b, nowUs };
    case 3:
      return { kind: 'finished-duplicate', nowUs };
    case -1:
      return { kind: 'queue_full', retryUs: a, depth: b, nowUs };
    case -2:
      return { kind: 'wait_too_long', retryUs: a, waitUs: b, depth: depth ?? 0, nowUs };
    case -3:
      return { kind: 'quota_exhausted', retryUs: a, depth: b, nowUs, quota: depth ?? 0 };
    default:
      throw new SluiceError('SLUICE_ERR_SCRIPT', `throttle-admit answered ${JSON.stringify(reply)}`);
  }
}

/**
 * One admission handed to the registry, which sends it with the others of the same turn; the call, its
 * deadline and its answer in one object (no timer, closure or promise chain of its own: the deadline
 * is a link in the shared list of src/redis/deadline.ts). Pending while the deadline runs: a call not
 * sent by then is never sent, so a submit answered with an error admitted nothing unless its call was
 * already on the way (then its job and unit exist together, as for any admission).
 */
class AdmitCall extends Deadline implements ManyKeyCall {
  private readonly forever: boolean;

  constructor(
    readonly keys: readonly string[],
    readonly args: readonly ScriptArg[],
    private readonly resolve: (reply: AdmitReply) => void,
    private readonly reject: (error: unknown) => void,
    private readonly deadline: { ms: number; what: string } | undefined,
  ) {
    super();
    this.forever = deadline === undefined;
    if (deadline) this.start(deadline.ms);
  }

  override get pending(): boolean {
    return this.forever || super.pending;
  }

  protected expire(): void {
    this.reject(deadlineError(this.deadline!.what, this.deadline!.ms));
  }

  onReply(raw: unknown): void {
    if (!this.forever && !this.settle()) return;
    try {
      this.resolve(admitReply(raw));
    } catch (error) {
      this.reject(error);
    }
  }

  onError(error: unknown): void {
    if (!this.forever && !this.settle()) return;
    if (isSluiceError(error) || !this.deadline) this.reject(error);
    else this.reject(new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', `${this.deadline.what}: ${(error as Error).message}`, { cause: error }));
  }
}
