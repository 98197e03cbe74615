// A BullMQ Worker that begins each job's processing the moment the job is fetched, instead of when
// BullMQ's main loop gets round to it.
//
// Why: BullMQ's main loop (node_modules/bullmq/dist/cjs/classes/worker.js, mainLoop) fetches jobs one
// by one and hands none of them to its processor while fetches keep returning jobs, up to the worker's
// concurrency. A throttle's worker has a concurrency of its handlers plus the jobs it may hold for their
// start (110 by default), and the dispatcher hands a horizon's worth of starts out at once. So after a
// burst's first hand-out a worker fetched 120 jobs back to back (~2 ms each on a busy machine) before
// its first gate call: traced in bench/global-cap.ts at 2,000/s, no start at all from 20 to 250 ms
// after the first submit, then 120 gate calls at once, most of them past their start and handed back.
// Here the processing (the gate call, the wait for the start, the handler) begins as soon as a job is
// fetched; BullMQ's own processing of it later (lock renewal, completion, events) awaits that same run.
//
// And one fetch at a time is too few when the dispatcher hands out many starts at once: each fetch is a
// round trip (2-3 ms while a submit burst keeps Redis and the machine busy), so one loop takes at most
// ~400 jobs a second. `fetchMore(n)` sends n fetches beside BullMQ's loop (non-blocking: one that finds
// the wait list empty costs one call), each job they get processed as BullMQ processes its own
// (processJob: lock renewal, completion or failure, events). The dispatcher of the process asks for
// them when a round hands out more than one start; a round of one start (200/s) asks for none. An extra
// fetch is sent only while the jobs being processed (by either path) and the fetches in flight are fewer
// than the worker's concurrency. BullMQ's loop counts only its own jobs, so the two together hold at most
// twice the concurrency; what they hold is in any case what the dispatcher handed out within its horizon.
import { Worker, type Job, type JobJson, type Processor, type WorkerOptions } from 'bullmq';
import { quietFetches } from './quiet-fetch.js';

export class EarlyStartWorker<D> extends Worker<D> {
  /** Runs begun at fetch, until BullMQ's processing of the job takes them. */
  private readonly begun = new WeakMap<Job<D>, Promise<unknown>>();
  /** Set once the constructor ran (BullMQ's own starts its main loop, whose first fetch ends later). */
  private handle: ((job: Job<D>, token: string) => Promise<unknown>) | undefined;
  /** Jobs of this worker being processed (fetched by either path), and extra fetches in flight. */
  private inProcess = 0;
  private fetching = 0;
  private extraSeq = 0;
  /** The extra fetches and the processing of what they got, until done (close() waits for them). */
  private readonly extraRuns = new Set<Promise<unknown>>();
  /** Set while BullMQ's loop begins the fetch that follows its blocking wait (src/throttle/quiet-fetch.ts). */
  private quietNext = false;
  /** Jobs whose fetch left no job waiting (src/throttle/quiet-fetch.ts), until nextJobFromJobData takes them. */
  private readonly lastWaiting = new Set<string>();

  constructor(name: string, handle: (job: Job<D>, token: string) => Promise<unknown>, options: WorkerOptions) {
    let self: EarlyStartWorker<D> | undefined;
    super(name, ((job: Job<D>, token?: string) => self!.take(job, token)) as Processor<D>, options);
    self = this;
    this.handle = handle;
    quietFetches(this.backend, { quiet: () => this.quietNext, noneWaiting: (jobId) => this.lastWaiting.add(jobId) });
  }

  /**
   * Sends up to `n` fetches beside BullMQ's loop, each only while the jobs being processed (by either
   * path) and the fetches in flight are fewer than the worker's concurrency.
   */
  fetchMore(n: number): void {
    for (let i = 0; i < n && this.inProcess + this.fetching < this.concurrency && !this.closing && !this.isPaused(); i++) {
      this.fetching++;
      const token = `${this.id}:x${this.extraSeq++}`;
      // The backend's fetch, not the worker's: Worker.moveToActive also sets the loop's state from the
      // reply (the next delayed job's instant as its block deadline, which here is a parked job's, an hour
      // on), and the loop, told so from beside it, stopped fetching until one of its jobs finished (a
      // sharded cap on a cluster lost a fifth of its starts: test/integration/throttle/shards.timing.test.ts).
      // A fetch that finds nothing leaves that state alone.
      const fetched = (this.backend.moveToActive(token, this.opts.name) as Promise<[JobJson | undefined, string | undefined]>)
        .then(([jobData, jobId]) => (jobData ? this.nextJobFromJobData(jobData, jobId, token) : undefined))
        .finally(() => this.fetching--);
      const run = fetched
        .then((job) => (job ? this.processJob(job, token, () => false) : undefined))
        .catch(() => undefined)
        .finally(() => this.extraRuns.delete(run));
      this.extraRuns.add(run);
    }
  }

  /**
   * Closes as BullMQ's worker does, once the jobs the extra fetches got are done too. BullMQ sets
   * `closing` as the call begins, which stops the extra fetches; its close waits only for the jobs its
   * own loop fetched, and the shared connection stays open for these.
   */
  override async close(force?: boolean): Promise<void> {
    const closed = super.close(force);
    await Promise.all([closed, ...this.extraRuns]);
  }

  /** BullMQ's processor: the run begun at fetch, or (a job fetched otherwise) one begun now. */
  private take(job: Job<D>, token?: string): Promise<unknown> {
    const run = this.begun.get(job);
    if (run) {
      this.begun.delete(job);
      return run;
    }
    return this.begin(job, token ?? job.token!);
  }

  private begin(job: Job<D>, token: string): Promise<unknown> {
    this.inProcess++;
    const run = this.handle!(job, token).finally(() => this.inProcess--);
    // BullMQ's processing of the job takes the rejection; until then it must not count as unhandled.
    run.catch(() => undefined);
    return run;
  }

  /**
   * BullMQ's loop fetches here. While its blocking wait on the marker is what woke it (BullMQ sets `waiting`
   * around that fetch), the fetch is a quiet one: usually it takes the only job a round put on the wait list.
   * BullMQ's fetch begins the backend's call before its first await, so the flag is read as it is set.
   */
  protected override moveToActive(token: string, name?: string): Promise<Job<D>> {
    this.quietNext = (this as unknown as { waiting: unknown }).waiting != null;
    try {
      return super.moveToActive(token, name);
    } finally {
      this.quietNext = false;
    }
  }

  protected override async nextJobFromJobData(jobData?: JobJson, jobId?: string, token?: string): Promise<Job<D>> {
    const job = await super.nextJobFromJobData(jobData, jobId, token);
    // The fetch took the last job waiting: BullMQ's loop would fetch again at once and find nothing (then
    // set `drained`); drained now, its next fetch blocks on the marker, which the next job brings.
    // (BullMQ has just set `drained` false for the job, so this is the change its 'drained' event marks.)
    if (jobId !== undefined && this.lastWaiting.delete(jobId) && job) {
      this.emit('drained');
      (this as unknown as { drained: boolean }).drained = true;
    }
    // A job BullMQ is about to fail without running it (a deferred failure) is left to BullMQ.
    if (job && this.handle && !job.deferredFailure && token !== undefined) this.begun.set(job, this.begin(job, token));
    return job;
  }
}
