// Job transitions as events any process can follow: one Redis stream per throttle (`<tag>:ev`, in the
// throttle's hash tag so it lives in the throttle's cluster slot), capped with MAXLEN ~. The submit
// path and the worker append to it; every process reads it with one blocking XREAD loop per throttle
// and fans the entries out to its local subscribers. Events are notifications: the job's status (the
// BullMQ record) stays the truth, and an event lost to a crash between a transition and its XADD only
// delays a waiter until its backstop read.
import type { Cluster, Redis } from 'ioredis';

export const JOB_EVENT_TYPES = ['admitted', 'started', 'deferred', 'completed', 'failed', 'cancelled', 'progress'] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

/** Entries kept in a throttle's event stream (MAXLEN ~: Redis trims whole nodes, so a few more may stay). */
export const EVENT_STREAM_MAXLEN = 10_000;

/** One transition of one job. */
export interface JobEvent {
  /** The stream entry id (`<ms>-<seq>`): unique and increasing within the throttle. */
  id: string;
  type: JobEventType;
  jobId: string;
  /** When it was recorded (epoch ms, Redis time: the entry id's time part). */
  atMs: number;
  /** The job's lane. */
  lane?: string;
  /** The tenant that submitted the job (absent without authentication). */
  tenant?: string;
  /** admitted: the predicted start (epoch ms) and the jobs ahead of it in its lane. */
  startsAtMs?: number;
  position?: number;
  /** started, completed, failed: handler runs so far (the one that just started or ended included). */
  attemptsMade?: number;
  /** deferred: sent back by the rate gate (`rate`), or held because the upstream asked (`upstream`). */
  reason?: 'rate' | 'upstream';
  /** deferred by the upstream: how long its lane (or throttle) is held, ms. */
  delayMs?: number;
  /** failed: the failure's message, and whether another attempt follows (false: the job is failed for good). */
  failedReason?: string;
  retrying?: boolean;
  /** progress: the value the handler reported. */
  progress?: unknown;
}

/** What an event carries besides its type and job (JSON in the stream entry). */
export type JobEventDetail = Omit<JobEvent, 'id' | 'type' | 'jobId' | 'atMs'>;

/** True for the events after which a job does not change again (a failure that will be retried is not one). */
export function isFinal(event: Pick<JobEvent, 'type' | 'retrying'>): boolean {
  return event.type === 'completed' || event.type === 'cancelled' || (event.type === 'failed' && event.retrying === false);
}

/** Appends one event; never throws (an event is a notification, the transition already happened). */
export function appendJobEvent(client: Redis | Cluster, key: string, type: JobEventType, jobId: string, detail: JobEventDetail = {}): Promise<void> {
  return client
    .xadd(key, 'MAXLEN', '~', EVENT_STREAM_MAXLEN, '*', 'e', type, 'j', jobId, 'd', JSON.stringify(detail))
    .then(
      () => undefined,
      () => undefined,
    );
}

/** Reads one stream entry's fields back into an event (undefined when it is not one of ours). */
export function parseJobEvent(id: string, fields: readonly string[]): JobEvent | undefined {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
  const type = map.get('e') as JobEventType | undefined;
  const jobId = map.get('j');
  if (!type || !JOB_EVENT_TYPES.includes(type) || !jobId) return undefined;
  let detail: JobEventDetail = {};
  try {
    detail = JSON.parse(map.get('d') ?? '{}') as JobEventDetail;
  } catch {
    detail = {};
  }
  return { ...detail, id, type, jobId, atMs: Number(id.slice(0, id.indexOf('-'))) };
}

export type JobEventListener = (event: JobEvent) => void;

/**
 * This process's reader of one throttle's event stream: one blocking connection and one XREAD loop,
 * running while anyone listens, shared by every subscriber (a long-poll or an SSE stream is a map
 * entry, not a Redis connection).
 */
export class JobEventStream {
  private readonly all = new Set<JobEventListener>();
  private readonly byJob = new Map<string, Set<JobEventListener>>();
  private reader: Redis | Cluster | undefined;
  private running: Promise<void> | undefined;
  /** Resolves once the running loop knows where the stream ends: subscribers get every entry after that. */
  private positioned: Promise<void> | undefined;
  private closed = false;
  /** The running loop saw no listeners and is ending. */
  private exiting = false;

  constructor(
    private readonly client: () => Redis | Cluster,
    readonly key: string,
    private readonly blockMs = 5_000,
  ) {}

  /**
   * Whether anyone listens, without counting them: the loop asks after every read, and counting walks
   * every watched job's set (20,000 long-polls at 2,000 events a second: 0.18-0.24 of a core against
   * 0.14-0.17 without, bench/event-listeners.ts). A job's set leaves the map with its last listener.
   */
  protected hasListeners(): boolean {
    return this.all.size > 0 || this.byJob.size > 0;
  }

  /** Local subscribers (every job and one job's). */
  get listeners(): number {
    let n = this.all.size;
    for (const set of this.byJob.values()) n += set.size;
    return n;
  }

  /**
   * Calls `listener` for every event appended after this resolves (only `jobId`'s when given; a few
   * appended just before may come too). Returns the unsubscribe function.
   */
  async subscribe(listener: JobEventListener, options: { jobId?: string } = {}): Promise<() => void> {
    if (this.closed) throw new Error('the event stream is closed');
    const { jobId } = options;
    if (jobId === undefined) this.all.add(listener);
    else {
      let set = this.byJob.get(jobId);
      if (!set) this.byJob.set(jobId, (set = new Set()));
      set.add(listener);
    }
    const unsubscribe = () => {
      if (jobId === undefined) this.all.delete(listener);
      else {
        const set = this.byJob.get(jobId);
        set?.delete(listener);
        if (set?.size === 0) this.byJob.delete(jobId);
      }
    };
    try {
      // A loop that has just decided to stop (no listeners a moment ago) would not deliver to this
      // one: wait for it to end; its end starts a new loop, positioned afresh.
      if (this.exiting) await this.running?.catch(() => undefined);
      this.start();
      await this.positioned;
    } catch (error) {
      unsubscribe();
      throw error;
    }
    return unsubscribe;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.all.clear();
    this.byJob.clear();
    this.reader?.disconnect();
    await this.running?.catch(() => undefined);
    this.reader = undefined;
  }

  private start(): void {
    if (this.running) return;
    let ready!: () => void;
    let failed!: (error: unknown) => void;
    this.positioned = new Promise<void>((resolve, reject) => {
      ready = resolve;
      failed = reject;
    });
    this.running = this.loop(ready, failed).finally(() => {
      this.running = undefined;
      this.exiting = false;
      // A subscriber that came while the loop was ending starts it again.
      if (!this.closed && this.hasListeners()) this.start();
    });
  }

  private async loop(ready: () => void, failed: (error: unknown) => void): Promise<void> {
    if (!this.reader) {
      // Its own connection: XREAD BLOCK holds it.
      this.reader = (this.client() as Redis).duplicate() as Redis | Cluster;
      this.reader.on('error', () => undefined);
    }
    const reader = this.reader;
    let last: string;
    try {
      // Where the stream ends now: reading from `$` would lose what is appended before the first XREAD reaches Redis.
      const tail = (await reader.xrevrange(this.key, '+', '-', 'COUNT', 1)) as [string, string[]][];
      last = tail[0]?.[0] ?? '0-0';
    } catch (error) {
      failed(error);
      return;
    }
    ready();
    for (;;) {
      if (this.closed || !this.hasListeners()) {
        this.exiting = true;
        return;
      }
      let reply: [string, [string, string[]][]][] | null;
      try {
        reply = (await reader.xread('COUNT', 1000, 'BLOCK', this.blockMs, 'STREAMS', this.key, last)) as [string, [string, string[]][]][] | null;
      } catch {
        if (this.closed) return;
        await new Promise((resolve) => setTimeout(resolve, 500));
        continue;
      }
      for (const [, entries] of reply ?? []) {
        for (const [id, fields] of entries) {
          last = id;
          const event = parseJobEvent(id, fields);
          if (event) this.deliver(event);
        }
      }
    }
  }

  private deliver(event: JobEvent): void {
    for (const listener of [...this.all, ...(this.byJob.get(event.jobId) ?? [])]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own; the others still get the event.
      }
    }
  }
}

/**
 * A sharded throttle's events (src/throttle/shards.ts): its shards' streams as one. A job's subscription
 * goes to its shard's stream; a subscription to every job, to every shard's (events of different shards
 * come in no common order).
 */
export class ShardedJobEventStream extends JobEventStream {
  constructor(
    key: string,
    private readonly streams: readonly JobEventStream[],
    private readonly shardOf: (jobId: string) => number | undefined,
  ) {
    super(() => {
      throw new Error('a sharded throttle reads its shards\u2019 streams');
    }, key);
  }

  override get listeners(): number {
    return this.streams.reduce((n, s) => n + s.listeners, 0);
  }

  override async subscribe(listener: JobEventListener, options: { jobId?: string } = {}): Promise<() => void> {
    if (options.jobId !== undefined) {
      const shard = this.shardOf(options.jobId);
      // An id of no shard is no job of this throttle: nothing will ever come.
      return shard === undefined ? () => undefined : this.streams[shard]!.subscribe(listener, options);
    }
    const offs = await Promise.all(this.streams.map((s) => s.subscribe(listener)));
    return () => {
      for (const off of offs) off();
    };
  }

  override async close(): Promise<void> {
    await Promise.all(this.streams.map((s) => s.close()));
  }
}
