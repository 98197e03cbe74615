// Follows the throttle's job event streams (a sharded throttle has one per shard) while the run lasts.
// A stream is capped (~10,000 entries, src/throttle/events.ts), fewer than a run writes: it is read as
// it grows, not once at the end.
import { parseJobEvent } from '../../../src/throttle/events.js';
import { sleep, type JobEventRecord } from './records.js';
import { rawClient, type RawRedis } from './target.js';

const BATCH = 5_000;
const POLL_MS = 150;

export class EventTail {
  readonly events: JobEventRecord[] = [];
  private running = true;
  private readonly done: Promise<void>;

  constructor(redisUrl: string, streamKeys: readonly string[]) {
    const client = rawClient(redisUrl);
    this.done = Promise.all(streamKeys.map((key) => this.follow(client, key))).then(
      () => undefined,
    ).finally(() => client.disconnect());
  }

  private async follow(client: RawRedis, streamKey: string): Promise<void> {
    let last = '0-0';
    while (this.running) {
      const rows = (await client.xrange(streamKey, `(${last}`, '+', 'COUNT', BATCH)) as [string, string[]][];
      for (const [id, fields] of rows) {
        last = id;
        const event = parseJobEvent(id, fields);
        if (event) this.events.push({ type: event.type, jobId: event.jobId, ...(event.reason ? { reason: event.reason } : {}) });
      }
      if (rows.length < BATCH) await sleep(POLL_MS);
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
