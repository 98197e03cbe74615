// The one level that turns lane operations into script calls (lua/throttle-*.lua), and their replies
// into typed results. Times in replies are Redis µs.
import { SluiceError } from '../errors.js';
import { integerArray, integerReply } from '../redis/reply.js';
import type { ScriptRegistry } from '../redis/scripts.js';
import type { ThrottleTiming } from './config.js';
import { laneMember, type ThrottleKeys } from './keys.js';

export type AdmitReply =
  | { kind: 'admitted'; startUs: number; position: number; nowUs: number }
  | { kind: 'queued-duplicate'; startUs: number; position: number; nowUs: number }
  | { kind: 'finished-duplicate'; nowUs: number }
  | { kind: 'queue_full'; retryUs: number; depth: number; nowUs: number }
  | { kind: 'wait_too_long'; retryUs: number; waitUs: number; depth: number; nowUs: number };

export type StartReply = { go: true; startUs: number; nowUs: number } | { go: false; wakeUs: number; nowUs: number };

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
  ) {}

  /** `plan`: the lane's plan name, kept in the lane for the admin view ('' = none). */
  async admit(laneId: string, jobId: string, cost: number, idempotent: boolean, now: string, plan = ''): Promise<AdmitReply> {
    const t = this.timing;
    const reply = integerArray(
      'throttle-admit',
      await this.scripts.run(
        'throttle-admit',
        { lane: this.keys.lane(laneId), laneQueue: this.keys.laneQueue(laneId), busy: this.keys.busy, job: this.keys.job(jobId), pending: this.keys.pending },
        {
          now,
          jobId,
          cost,
          capacity: this.capacity,
          laneIntervalUs: t.laneIntervalUs,
          burst: this.burst,
          globalIntervalUs: t.globalIntervalUs,
          maxWaitUs: t.maxWaitUs,
          laneId,
          marginPpm: t.marginPpm,
          idempotent: idempotent ? 1 : 0,
          enqueueWithinUs: t.enqueueByUs,
          planName: plan,
        },
      ),
      4,
      5,
    );
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
      default:
        throw new SluiceError('SLUICE_ERR_SCRIPT', `throttle-admit answered ${JSON.stringify(reply)}`);
    }
  }

  /**
   * The outflow gate. `heldUs`: a start slot this job was granted and missed (its worker fell behind),
   * handed back so the job takes the next usable slot.
   */
  async start(laneId: string, jobId: string, cost: number, heldUs?: number): Promise<StartReply> {
    const t = this.timing;
    const [go, at, nowUs] = integerArray(
      'throttle-start',
      await this.scripts.run(
        'throttle-start',
        { ...this.laneKeys(laneId), global: this.keys.global },
        {
          now: '',
          member: laneMember(jobId, cost),
          cost,
          laneIntervalUs: t.laneIntervalUs,
          burst: this.burst,
          globalIntervalUs: t.globalIntervalUs,
          leadUs: t.leadUs,
          marginPpm: t.marginPpm,
          laneId,
          lateToleranceUs: t.lateToleranceUs,
          heldUs: heldUs ?? '',
        },
      ),
      3,
    ) as [number, number, number];
    return go === 1 ? { go: true, startUs: at, nowUs } : { go: false, wakeUs: at, nowUs };
  }

  /** Takes admitted members back out of the lane (their jobs were never enqueued). */
  async release(laneId: string, members: string[]): Promise<number> {
    return integerReply(
      'throttle-release',
      await this.scripts.run('throttle-release', { ...this.laneKeys(laneId), jobs: [] }, { now: '', laneId, mode: 'release', members }),
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
    return { lane: this.keys.lane(laneId), laneQueue: this.keys.laneQueue(laneId), busy: this.keys.busy, laneReservations: this.keys.laneReservations(laneId) };
  }

  /** Holds the lane (or the whole throttle) for `ms` from now; returns the Redis µs at which starts resume. */
  async pause(laneId: string, ms: number, scope: 'lane' | 'global'): Promise<number> {
    return integerReply(
      'throttle-pause',
      await this.scripts.run('throttle-pause', { lane: this.keys.lane(laneId), global: this.keys.global }, { now: '', pauseUs: Math.round(ms * 1000), scope }),
    );
  }

  async state(laneId: string, now = ''): Promise<LaneState> {
    const [slotUs, depth, jobs, nowUs] = integerArray(
      'throttle-lane',
      await this.scripts.run('throttle-lane', { lane: this.keys.lane(laneId), laneQueue: this.keys.laneQueue(laneId) }, { now }),
      4,
    );
    return { slotUs: slotUs!, depth: depth!, jobs: jobs!, nowUs: nowUs! };
  }
}
