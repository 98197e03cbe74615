// Callback deliveries of a throttle: a BullMQ queue of its own (`<name>.callbacks`, under the
// throttle's prefix, so in its cluster slot), one delivery job per finished job and outcome (its id
// `<job id>.<outcome>`: enqueued twice, delivered from one), retried with exponential backoff. Every
// attempt is appended to a list the job's status shows. Enqueued by the worker before it reports the
// job finished, so a crash in between re-runs the job and enqueues again: at least once.
import { Queue, Worker } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { deliverOnce, type AttemptRecord } from '../callbacks/deliver.js';
import type { ThrottleKeys } from './keys.js';

/** Delivery attempts per outcome, and the first backoff (doubling: 1 s, 2 s, 4 s ... about 8.5 min in all). */
export const CALLBACK_ATTEMPTS = 10;
export const CALLBACK_BACKOFF_MS = 1_000;
/** How long one attempt may take (connect, send, the receiver's answer). */
export const CALLBACK_TIMEOUT_MS = 10_000;
/** Deliveries at once per worker process: a receiver that hangs holds one slot for the timeout, not the others. */
export const CALLBACK_CONCURRENCY = 20;
/** How long the attempts of a job's callback are kept (s). */
const ATTEMPTS_TTL_S = 7 * 24 * 3600;

export type CallbackOutcome = 'completed' | 'failed';

interface DeliveryData {
  /** The job. */
  j: string;
  u: string;
  /** The host was listed exactly: a private address is allowed. */
  pa: boolean;
  /** The signed body. */
  b: string;
}

export interface CallbackInfo {
  url: string;
  attempts: AttemptRecord[];
  delivered: boolean;
}

export class Callbacks {
  private queue: Queue<DeliveryData> | undefined;
  private worker: Worker<DeliveryData> | undefined;

  constructor(
    private readonly keys: ThrottleKeys,
    private readonly client: () => Redis | Cluster,
  ) {}

  get queueName(): string {
    return `${this.keys.name}.callbacks`;
  }

  private bullQueue(): Queue<DeliveryData> {
    if (!this.queue) {
      this.queue = new Queue<DeliveryData>(this.queueName, { connection: this.client(), prefix: this.keys.bullPrefix });
      this.queue.on('error', () => undefined);
    }
    return this.queue;
  }

  /** Queues the delivery of `outcome` of `jobId` (a second call for the same job and outcome is a no-op). */
  async enqueue(jobId: string, outcome: CallbackOutcome, url: string, privateAllowed: boolean, body: string): Promise<void> {
    await this.bullQueue().add(
      'deliver',
      { j: jobId, u: url, pa: privateAllowed, b: body },
      {
        jobId: `${jobId}.${outcome}`,
        attempts: CALLBACK_ATTEMPTS,
        backoff: { type: 'exponential', delay: CALLBACK_BACKOFF_MS },
        removeOnComplete: { age: ATTEMPTS_TTL_S },
        removeOnFail: { age: ATTEMPTS_TTL_S },
      },
    );
  }

  /** Delivers this throttle's callbacks from this process, signing with `secret`. */
  start(secret: string, options: { timeoutMs?: number; concurrency?: number } = {}): void {
    if (this.worker) return;
    const client = this.client();
    this.worker = new Worker<DeliveryData>(
      this.queueName,
      async (job) => {
        const attempt = await deliverOnce({ url: job.data.u, body: job.data.b, secret, privateAllowed: job.data.pa, eventId: job.id!, timeoutMs: options.timeoutMs ?? CALLBACK_TIMEOUT_MS });
        const key = this.keys.callbackAttempts(job.data.j);
        await client.rpush(key, JSON.stringify(attempt));
        await client.expire(key, ATTEMPTS_TTL_S);
        if (!attempt.delivered) throw new Error(attempt.error ?? 'not delivered');
      },
      { connection: client, prefix: this.keys.bullPrefix, concurrency: options.concurrency ?? CALLBACK_CONCURRENCY },
    );
    this.worker.on('error', () => undefined);
  }

  /** Every attempt so far of `jobId`'s callback, oldest first. */
  async attempts(jobId: string): Promise<AttemptRecord[]> {
    const raw = await this.client().lrange(this.keys.callbackAttempts(jobId), 0, -1);
    return raw.map((r) => JSON.parse(r) as AttemptRecord);
  }

  async close(): Promise<void> {
    await this.worker?.close();
    await this.queue?.close();
    this.worker = undefined;
    this.queue = undefined;
  }
}
