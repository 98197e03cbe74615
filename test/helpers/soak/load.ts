// The offered load: submits at a fixed rate over Zipf-skewed keys, well above what the lanes drain.
// Each key's submits go one after another, so a lane's submit order is its admission order (the FIFO
// check relies on it); some refusals are sent again at their retryAfterMs, as a client that honours
// Retry-After would. Every submit carries a unique idempotency id: one that threw can still be found.
import type { Throttle } from '../../../src/index.js';
import { sleep, wallMs, type JobPayload, type Log, type SubmitRecord } from './records.js';
import { WORKLOAD } from './scenario.js';

/** What the submitter draws for each job of the offered load. */
export interface LoadDraws {
  random: () => number;
  /** A key index (Zipf-skewed). */
  key: () => number;
}

const PROGRESS_EVERY_MS = 5_000;

export class Submitter {
  readonly records: SubmitRecord[] = [];
  private readonly chains = new Map<string, Promise<void>>();
  private readonly followUps = new Set<NodeJS.Timeout>();
  private acceptingFollowUps = true;
  private seq = 0;
  private inFlight = 0;
  maxInFlight = 0;

  constructor(
    private readonly throttle: Throttle,
    private readonly draws: LoadDraws,
  ) {}

  /** Submits `perSecond` jobs a second for `durationMs`, without waiting for their answers. */
  async run(perSecond: number, durationMs: number, log: Log, progress: () => string): Promise<void> {
    const begin = wallMs();
    let issued = 0;
    let lastLog = begin;
    while (wallMs() - begin < durationMs) {
      const due = Math.floor(((wallMs() - begin) / 1000) * perSecond);
      for (; issued < due; issued++) this.submitDrawn();
      if (wallMs() - lastLog >= PROGRESS_EVERY_MS) {
        lastLog = wallMs();
        log(`submitted ${issued}, in flight ${this.inFlight}; ${progress()}`);
      }
      await sleep(5);
    }
  }

  /** One job of the offered load: its key, its payload's behaviour and its cost, drawn in that order. */
  private submitDrawn(): void {
    const { random } = this.draws;
    const key = `k${this.draws.key()}`;
    const payload: JobPayload = { n: this.seq };
    const u = random();
    if (u < WORKLOAD.failAlwaysFraction) payload.failTimes = WORKLOAD.attempts + 5;
    else if (u < WORKLOAD.failAlwaysFraction + WORKLOAD.failOnceFraction) payload.failTimes = 1;
    else if (u < WORKLOAD.failAlwaysFraction + WORKLOAD.failOnceFraction + WORKLOAD.deferFraction) payload.deferMs = WORKLOAD.deferMs;
    const cost = 1 + Math.floor(random() * WORKLOAD.maxCost);
    // Drawn now, not when the answer comes: the draws' order stays the seed's, whatever the timing.
    const followUp = random() < WORKLOAD.retryAfterFraction;
    void this.submit(key, cost, payload, 'load').then((r) => {
      if (followUp && r.admitted === false) this.followUp(r);
    });
  }

  /** A refused submit sent again once its retryAfterMs has passed (a long wait, a quota's reset, is not waited for). */
  private followUp(refused: SubmitRecord): void {
    if (!this.acceptingFollowUps || refused.retryAfterMs! > WORKLOAD.retryAfterMaxMs) return;
    const timer = setTimeout(() => {
      this.followUps.delete(timer);
      if (this.acceptingFollowUps) void this.submit(refused.key, refused.cost, { n: this.seq }, 'follow-up');
    }, refused.retryAfterMs);
    this.followUps.add(timer);
  }

  /** Submits after the key's earlier submits were answered; resolves with the record once answered. */
  submit(key: string, cost: number, payload: JobPayload, phase: SubmitRecord['phase']): Promise<SubmitRecord> {
    const seq = this.seq++;
    const id = `s${seq}`;
    const record: SubmitRecord = { seq, key, lane: this.throttle.keys.laneId(key), cost, payload, phase, jobId: this.throttle.keys.jobId(id), sentAt: 0 };
    this.records.push(record);
    this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
    const next = (this.chains.get(key) ?? Promise.resolve()).then(async () => {
      record.sentAt = wallMs();
      try {
        const r = await this.throttle.submit(key, payload, { cost, id });
        if (r.admitted) Object.assign(record, { admitted: true, jobId: r.jobId, duplicate: r.duplicate === true });
        else Object.assign(record, { admitted: false, reason: r.reason, retryAfterMs: r.retryAfterMs, queued: r.queued });
      } catch (error) {
        record.error = (error as Error).message.slice(0, 200);
      } finally {
        record.answeredAt = wallMs();
        this.inFlight--;
      }
    });
    this.chains.set(key, next);
    return next.then(() => record);
  }

  /** Lets the follow-ups due within `graceMs` go out, then sends no more and waits for every answer. */
  async settle(graceMs: number): Promise<void> {
    await sleep(graceMs);
    this.acceptingFollowUps = false;
    for (const timer of this.followUps) clearTimeout(timer);
    this.followUps.clear();
    await Promise.all(this.chains.values());
  }
}
