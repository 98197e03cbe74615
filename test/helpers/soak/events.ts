// Follows the throttle's job event stream while the run lasts. The stream is capped (~10,000 entries,
// src/throttle/events.ts), fewer than a run writes: it is read as it grows, not once at the end.
import { Redis } from 'ioredis';
import { parseJobEvent } from '../../../src/throttle/events.js';
import { sleep, type JobEventRecord } from './records.js';

const BATCH = 5_000;
const POLL_MS = 150;

export class EventTail {
  readonly events: JobEventRecord[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(redisUrl: string, streamKey: string) {
    this.done = this.follow(new Redis(redisUrl), streamKey);
  }

  private async follow(client: Redis, streamKey: string): Promise<void> {
    let last = '0-0';
    try {
      while (this.running) {
        const rows = (await client.xrange(streamKey, `(${last}`, '+', 'COUNT', BATCH)) as [string, string[]][];
        for (const [id, fields] of rows) {
          last = id;
          const event = parseJobEvent(id, fields);
          if (event) this.events.push({ type: event.type, jobId: event.jobId, ...(event.reason ? { reason: event.reason } : {}) });
        }
        if (rows.length < BATCH) await sleep(POLL_MS);
      }
    } finally {
      client.disconnect();
    }
  }

  /** Reads what is left (one more pass) and stops. */
  async stop(): Promise<JobEventRecord[]> {
    await sleep(POLL_MS * 2);
    this.running = false;
    await this.done;
    return this.events;
  }
}
