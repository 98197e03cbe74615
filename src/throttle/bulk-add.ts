// The BullMQ adds of the submits admitted in one turn of the event loop, sent as one pipeline
// (`queue.addBulk`) instead of one command each: the adds follow the batched admission script
// (lane-scripts.ts), whose replies arrive together, so their submits reach here in the same turn.
// Node pays one write and one reply parse for the lot; Redis still runs one add script per job.
import type { JobsOptions, Queue } from 'bullmq';
import type { JobData } from './job-status.js';

/** At most this many jobs per pipeline (one admission batch holds at most 32, scripts.ts MAX_BATCH). */
const MAX_BULK = 64;

/** One job waiting for the end of the turn. */
export interface PendingAdd {
  readonly data: JobData;
  readonly opts: JobsOptions & { jobId: string };
  /**
   * Set by the submit once it has been answered (its deadline passed): a job not sent yet is then never
   * sent, so the unit the submit gives back can never come back as a job outside the lane's bound.
   */
  cancelled: boolean;
}

interface Entry {
  job: PendingAdd;
  resolve(): void;
  reject(error: unknown): void;
}

export class BulkAdder {
  private batch: Entry[] = [];

  constructor(
    private readonly queue: () => Queue<JobData>,
    private readonly name: string,
  ) {}

  /** Adds `job` with the others of this turn; resolves once it is in BullMQ, rejects when its pipeline failed. */
  add(job: PendingAdd): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.batch.push({ job, resolve, reject });
      if (this.batch.length === 1) setImmediate(() => this.flush());
    });
  }

  private flush(): void {
    const live = this.batch.filter((e) => !e.job.cancelled);
    this.batch = [];
    for (let i = 0; i < live.length; i += MAX_BULK) void this.send(live.slice(i, i + MAX_BULK));
  }

  private async send(entries: Entry[]): Promise<void> {
    try {
      const queue = this.queue();
      // One job alone goes as BullMQ's plain add: a pipeline of one only costs more.
      if (entries.length === 1) await queue.add(this.name, entries[0]!.job.data, entries[0]!.job.opts);
      else await queue.addBulk(entries.map((e) => ({ name: this.name, data: e.job.data, opts: e.job.opts })));
    } catch (error) {
      // Which adds of a failed pipeline landed is unknown: each submit settles its own unit (throttle.ts).
      for (const e of entries) e.reject(error);
      return;
    }
    for (const e of entries) e.resolve();
  }
}
