// The worker side of a throttle: BullMQ Workers on the throttle's one queue, this process's dispatcher
// (which hands queued jobs to the workers at their turn), and the outflow gate in front of the handler:
// the worker waits for the job's start instant and runs the handler then. A job that arrives without a
// start (a retry, a re-run after a crash) goes back to the head of its lane and is parked, no attempt used.
// A sharded throttle: all of that once per shard, the handlers of every shard sharing one `concurrency`.
import { DelayedError, type Job } from 'bullmq';
import { PARK_MS } from './dispatcher.js';
import { SluiceError } from '../errors.js';
import type { ThrottleContext } from './context.js';
import { DeferJob, LateSend } from './defer.js';
import { EarlyStartWorker } from './early-start-worker.js';
import { HoldPolicy } from './hold-policy.js';
import type { JobData } from './job-status.js';
import { LaneRepairer } from './repair.js';
import { passGate } from './pass-gate.js';
import { Semaphore } from './semaphore.js';
import type { Throttle } from './throttle.js';
import type { LearnOutcome, UpstreamReport, UpstreamScope } from './upstream-learn.js';
import { collectStartupGarbage } from './startup-collection.js';

/** What a handler receives. */
export interface ThrottledJob<P = unknown> {
  id: string;
  /** The payload given to submit(). */
  data: P;
  cost: number;
  /** The lane (the key's identity segment; hashed when the key was sensitive). */
  lane: string;
  /** Failed runs before this one. */
  attemptsMade: number;
  /** The reserved start instant (epoch ms, Redis time). */
  slotMs: number;
  /** The underlying BullMQ job (logs). */
  raw: Job<JobData>;
  /**
   * Reports the handler's progress (a number, string, boolean or object): stored on the job (its
   * status shows the last one) and appended to the throttle's events as a `progress` event.
   */
  progress(value: number | string | boolean | object): Promise<void>;
  /**
   * Tells the throttle what the upstream said about its limit after this job's call: its budget
   * (`remaining` of `limit` until `resetMs`), a wait it asked for (`retryAfterMs`), a refusal
   * (`throttled`: a 429, with or without headers), or nothing (a plain success). Shared through Redis
   * by every worker process, it slows the queue (or, `scope: 'lane'`, this job's lane) to what the
   * upstream allows, never above the configured rate. A no-op when the queue's `upstream.learn` is
   * off. Never rejects: a failure to record is returned as `error`.
   */
  upstream(report: UpstreamReport, scope?: UpstreamScope): Promise<LearnOutcome>;
  /**
   * Call right before the upstream call leaves: throws {@link LateSend} (the job goes back to its lane,
   * keeping its place, no attempt used) when it would leave later after the start instant than the
   * queue's `upstream.sendHeadroomMs` (default 10 ms) — the starts are spaced so that calls within it
   * never put more than the rate in any 1 s window at the upstream. The http handler calls it.
   */
  assertOnTime(): void;
}

export type JobHandler<P = unknown, R = unknown> = (job: ThrottledJob<P>) => R | Promise<R>;

export interface ThrottleWorkerOptions {
  /** Handlers running at once in this process (default 10). */
  concurrency?: number;
  /**
   * Jobs this process may hold while they wait for their start instant (default 100). A job is handed
   * to the workers up to the throttle's leadMs before its start; at a total rate r about r x leadMs are held.
   * Held only while the handlers keep up: from the worker's start, and whenever a job had to wait for a
   * handler past its lateness tolerance, the process takes no more jobs than `concurrency`, and leaves
   * the rest in the queue, in the lane's order, for a process with a free handler (src/throttle/hold-policy.ts).
   */
  holdCapacity?: number;
  /** BullMQ lock duration (ms, default 30,000): a job whose worker died is re-run after about this long. */
  lockDurationMs?: number;
  /** How often stalled jobs are looked for (ms, default 30,000). */
  stalledIntervalMs?: number;
  /** Times a job may stall (its worker died) before it fails (default 3). */
  maxStalledCount?: number;
  /**
   * How often lane repair runs (ms, default 2,000; 0 = never). Each pass reads only the admissions whose
   * job should exist by now (2 x submitTimeoutMs + 1 s after admission), so a unit admitted without its
   * job (a schedule() call or a retry whose caller died; a submit writes its job with its unit) is freed
   * within about 2 x submitTimeoutMs + 1 s + this interval.
   */
  repairIntervalMs?: number;
  /**
   * Signs callback deliveries (HMAC-SHA256); default: the SLUICE_CALLBACK_SECRET environment variable.
   * Without one this process delivers no callbacks (another process with the secret does).
   */
  callbackSecret?: string;
  /** Backstop walk over busy lanes (every 30 s): members whose slot is older than this and whose job is missing (ms, default 120,000). */
  repairAfterMs?: number;
  /**
   * Run two young-generation garbage collections as soon as the worker has started (connected, its
   * dispatch loop just set going), once per process (default false; `sluice worker` and `sluice dev` set it). A fresh
   * process's first collections take 26-37 ms each and otherwise fall into its first burst of jobs,
   * which then start late (src/throttle/startup-collection.ts). Sets V8's `--expose-gc` at run time to
   * do so (the main context gets no `gc`).
   */
  collectAtStart?: boolean;
}

export class ThrottleWorker {
  /** One BullMQ Worker per shard (an unsharded throttle: one). */
  private readonly workers: EarlyStartWorker<JobData>[] = [];
  private readonly repairTimers: NodeJS.Timeout[] = [];
  /** Removes the dispatchers' hand-out listeners. */
  private readonly stopFetching: (() => void)[] = [];
  private readonly started: Promise<void>;
  private closing = false;
  /** The process's handler slots, shared by the shards' workers: `concurrency` handlers in all. */
  private readonly handlerSlots: Semaphore;
  /** How many jobs the shards' workers take at once: the handlers only, or with the held ones (hold-policy.ts). */
  private readonly holdPolicy: HoldPolicy;
  private readonly dispatching: Throttle[] = [];
  private allocating: Throttle | undefined;
  /** @internal How long the start-up collections took (ms; collectAtStart), undefined when none ran in this worker. */
  startupCollectionMs: number | undefined;

  /** @internal Made by `sluice.worker(name, handler)`. */
  constructor(
    private readonly ctx: ThrottleContext,
    throttle: Promise<Throttle>,
    private readonly handler: JobHandler,
    private readonly options: ThrottleWorkerOptions = {},
  ) {
    this.handlerSlots = new Semaphore(options.concurrency ?? 10);
    this.holdPolicy = new HoldPolicy(options.concurrency ?? 10, options.holdCapacity ?? 100, (limit) => {
      for (const w of this.workers) w.concurrency = limit;
    });
    this.started = throttle.then((t) => this.start(t));
    this.started.catch(() => undefined);
  }

  /** True once close() was called. */
  get isClosing(): boolean {
    return this.closing;
  }

  /** Resolves once the worker is connected and consuming. */
  async waitUntilReady(): Promise<void> {
    await this.started;
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
  }

  /** Stops taking jobs, waits for the ones in flight to finish, and disconnects. */
  async close(): Promise<void> {
    this.closing = true;
    for (const timer of this.repairTimers) clearInterval(timer);
    for (const stop of this.stopFetching.splice(0)) stop();
    await this.started.catch(() => undefined);
    await this.allocating?.shareAllocator?.release();
    const shards = this.dispatching.splice(0);
    await Promise.all(shards.map((t) => t.dispatcher.release(true)));
    await Promise.all(this.workers.map((w) => w.close()));
    // Its callback deliveries stop with it (one in flight finishes; the rest wait in Redis for another process).
    await Promise.all(shards.map((t) => t.callbacks.close()));
  }

  /** A worker per shard (one dispatch loop each), and on a sharded throttle with a cap, the division of the cap. */
  private async start(throttle: Throttle): Promise<void> {
    await Promise.all(throttle.shards.map((shard) => this.startShard(shard)));
    if (this.options.collectAtStart && !this.closing) this.startupCollectionMs = collectStartupGarbage();
    if (this.closing || !throttle.shareAllocator) return;
    throttle.shareAllocator.acquire();
    this.allocating = throttle;
  }

  private async startShard(throttle: Throttle): Promise<void> {
    if (this.closing) return;
    const { client } = this.ctx.bull();
    const o = this.options;
    const worker = new EarlyStartWorker<JobData>(throttle.name, (job, token) => this.track(throttle, job, token), {
      connection: client,
      prefix: throttle.keys.bullPrefix,
      // BullMQ's concurrency covers the jobs held for their slot too (when the hold policy lets it);
      // handlers are limited by handlerSlots.
      concurrency: this.holdPolicy.limit,
      lockDuration: o.lockDurationMs ?? 30_000,
      stalledInterval: o.stalledIntervalMs ?? 30_000,
      maxStalledCount: o.maxStalledCount ?? 3,
      removeOnComplete: keepOf(throttle.config.keepCompleted),
      removeOnFail: keepOf(throttle.config.keepFailed),
    });
    this.workers.push(worker);
    // Reconnects are BullMQ's job, but what it gives up on (a completion Redis refused, e.g. during a slot
    // migration) would otherwise leave a job active in silence: counted.
    worker.on('error', () => this.ctx.observer?.onWorkerError?.({ queue: throttle.name }));
    // Dispatch only once this process can take what it hands out: a job handed out before the worker
    // is connected would reach its start late.
    await worker.waitUntilReady();
    // On a cluster the connection to the master of the throttle's slot is made on first use: made now,
    // not by the first job's start call (which would then come late for its instant).
    await client.exists(throttle.keys.global).catch(() => undefined);
    // The gate's and the dispatcher's scripts in Redis before the first job: a first start call that
    // meets NOSCRIPT sends the whole source and waits for Redis to compile it, and comes late for its instant.
    await this.ctx.bull().scripts.load(['throttle-start', 'throttle-started', 'throttle-dispatch']).catch(() => undefined);
    if (this.closing) return;
    throttle.dispatcher.acquire(true);
    this.dispatching.push(throttle);
    // A round that hands out several starts: fetched at once, not one round trip after another (BullMQ's
    // loop takes one of them; src/throttle/early-start-worker.ts).
    // None while it takes only as many jobs as it has handlers: BullMQ's loop counts only its own jobs,
    // so with its fetch in flight the two paths together could take one more than the handlers.
    this.stopFetching.push(
      throttle.dispatcher.onHandOut((jobs) => {
        if (!this.holdPolicy.isStrict) worker.fetchMore(jobs - 1);
      }),
    );
    const observer = this.ctx.observer;
    // BullMQ emits these once the job's new state is in Redis: a reader woken by the event reads it finished.
    worker.on('completed', (job) => {
      observer?.onFinish?.({ queue: throttle.name, outcome: 'completed', durationMs: (job.finishedOn ?? 0) - (job.processedOn ?? 0) });
      void throttle.recordEvent('completed', job.id!, { ...whose(job), attemptsMade: job.attemptsMade });
    });
    worker.on('failed', (job) => {
      if (!job) return;
      const retrying = job.attemptsMade < (job.opts.attempts ?? 1);
      observer?.onFinish?.({ queue: throttle.name, outcome: retrying ? 'retrying' : 'failed', durationMs: (job.finishedOn ?? Date.now()) - (job.processedOn ?? Date.now()) });
      void throttle.recordEvent('failed', job.id!, { ...whose(job), attemptsMade: job.attemptsMade, failedReason: job.failedReason, retrying });
    });
    const secret = o.callbackSecret ?? process.env.SLUICE_CALLBACK_SECRET;
    if (secret) throttle.callbacks.start(secret);
    const interval = o.repairIntervalMs ?? 2_000;
    if (interval > 0) {
      const repairer = new LaneRepairer(client, throttle.keys, throttle.gateLanes, o.repairAfterMs ?? 120_000, (jobId) => throttle.dispatcher.promote(jobId));
      const timer = setInterval(() => {
        repairer.pass().then(
          (units) => units > 0 && observer?.onRepair?.({ queue: throttle.name, units }),
          () => undefined,
        );
      }, interval);
      timer.unref();
      this.repairTimers.push(timer);
    }
  }

  /** The callback's body (the outcome, as the job's status would show it) and its queued delivery. */
  private async enqueueCallback(throttle: Throttle, job: Job<JobData>, outcome: 'completed' | 'failed', detail: { result?: unknown; failedReason?: string }): Promise<void> {
    const body = JSON.stringify({
      event: `job.${outcome}`,
      eventId: `${job.id!}.${outcome}`,
      queue: throttle.name,
      job: {
        id: job.id!,
        state: outcome,
        attemptsMade: job.attemptsMade + 1,
        ...(job.data.s !== undefined ? { startsAt: new Date(job.data.s).toISOString() } : {}),
        submittedAt: new Date(job.timestamp).toISOString(),
        finishedAt: new Date().toISOString(),
        ...(outcome === 'completed' ? { result: detail.result ?? null } : { failedReason: detail.failedReason }),
      },
    });
    await throttle.callbacks.enqueue(job.id!, outcome, job.data.cb!, job.data.cbp === 1, body);
  }

  /** process(), counted among the jobs taken and not finished (the hold policy reads the count). */
  private async track(throttle: Throttle, job: Job<JobData>, token: string | undefined): Promise<unknown> {
    this.holdPolicy.taken();
    try {
      return await this.process(throttle, job, token);
    } finally {
      this.holdPolicy.finished();
    }
  }

  /**
   * A handler slot. A job that came to its start with none free and waited for one past the lateness
   * tolerance tells the hold policy: the handlers made it late. (Not one that waited less: at 2,000/s
   * more jobs than handlers fall due at once, and the fast handlers free their slots within microseconds.)
   */
  private enterHandler(toleranceMs: number): Promise<void> {
    if (this.handlerSlots.hasFree) {
      // (Taken at once: a free slot is held as acquire() returns.)
      const taken = this.handlerSlots.acquire();
      this.holdPolicy.handlerStarted();
      return taken;
    }
    const since = performance.now();
    return this.handlerSlots.acquire().then(() => {
      if (performance.now() - since > toleranceMs) this.holdPolicy.saturated();
      this.holdPolicy.handlerStarted();
    });
  }

  private exitHandler(): void {
    this.handlerSlots.release();
    this.holdPolicy.handlerEnded();
  }

  private async process(throttle: Throttle, job: Job<JobData>, token: string | undefined): Promise<unknown> {
    const { l: lane, c: cost, p: data } = job.data;
    // The lane's own interval and burst (its plan, or an operator's override) for a job sent back to it.
    const lanes = throttle.gateLanesFor(lane, job.data.pl);
    const outcome = await passGate(
      lanes,
      lane,
      job.id!,
      cost,
      throttle.timing,
      // Runs at the start instant, in the same synchronous step as the lateness check: the handler starts now.
      (slotUs, lateMs) => {
        this.ctx.observer?.onStart?.({ queue: throttle.name, queuedMs: Math.max(0, slotUs / 1000 - job.timestamp), lateMs, retry: job.attemptsMade > 0 });
        // The job's actual cost is the sum of the costs it reports; each report settles the difference
        // to what its lane and the queue were charged so far (first the admitted cost).
        let charged = cost;
        let reported = 0;
        const reconcile = async (actual: number) => {
          if (!Number.isFinite(actual) || actual < 0) return;
          reported += actual;
          const diff = reported - charged;
          if (diff === 0) return;
          charged = reported;
          try {
            await lanes.reconcile(lane, diff, '', slotUs);
            this.ctx.observer?.onReconcile?.({ queue: throttle.name, direction: diff > 0 ? 'charge' : 'refund', units: Math.abs(diff) });
          } catch {
            // The call was made: a meter that could not be corrected keeps the estimate.
          }
        };
        // The start instant on this process's clock: the gate calls this `lateMs` after it.
        const slotLocalMs = performance.now() - lateMs;
        const headroomMs = throttle.timing.sendHeadroomUs / 1000;
        const assertOnTime = () => {
          const late = performance.now() - slotLocalMs;
          if (late > headroomMs) throw new LateSend(late, headroomMs);
        };
        // The lane's unit is free from now (until this call arrives, the lane counts the job as not
        // started: its bound holds while a worker is late), with the 'started' event in the same call.
        // Sent before the handler runs, so the event precedes the handler's progress events in the stream.
        void lanes.started(lane, job.id!, cost, slotUs, { ...whose(job), attemptsMade: job.attemptsMade + 1 }).catch(() => undefined);
        try {
          const upstream = async (report: UpstreamReport, scope?: UpstreamScope) => {
            if (report.cost !== undefined) await reconcile(report.cost);
            const outcome = await reportUpstream(throttle, lane, report, slotUs, scope);
            this.ctx.observer?.onUpstream?.({ queue: throttle.name, event: outcome.event, ignored: report.ignored ?? [] });
            return outcome;
          };
          const progress = async (value: number | string | boolean | object) => {
            await job.updateProgress(value);
            await throttle.recordEvent('progress', job.id!, { ...whose(job), progress: value });
          };
          return Promise.resolve(this.handler({ id: job.id!, data, cost, lane, attemptsMade: job.attemptsMade, slotMs: slotUs / 1000, raw: job, upstream, assertOnTime, progress }));
        } catch (error) {
          return Promise.reject(error);
        }
      },
      () => this.enterHandler(throttle.timing.lateToleranceUs / 1000),
      () => this.exitHandler(),
      throttle.heldStarts,
    );
    if (!outcome.started) {
      // No start for it now: parked, then back in its lane (in that order: the dispatcher
      // may promote it the moment it is back), until the dispatcher hands it out again.
      throttle.dispatcher.behind();
      this.ctx.observer?.onDefer?.({ queue: throttle.name, reason: 'rate' });
      await job.moveToDelayed(Date.now() + PARK_MS, token);
      await lanes.start(lane, job.id!, cost, { mode: 'requeue', slotUs: outcome.slotUs });
      void throttle.recordEvent('deferred', job.id!, { ...whose(job), reason: 'rate' });
      throw new DelayedError();
    }
    try {
      const result = await outcome.result;
      // Before BullMQ marks it completed: a crash in between runs the job again, and enqueues again.
      if (job.data.cb !== undefined) await this.enqueueCallback(throttle, job, 'completed', { result });
      return result;
    } catch (error) {
      if (!(error instanceof DeferJob)) {
        const final = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
        if (final && job.data.cb !== undefined) await this.enqueueCallback(throttle, job, 'failed', { failedReason: (error as Error)?.message ?? String(error) });
        throw error;
      }
      // The upstream said "later": hold the lane (or the throttle), put the job back at the head of its
      // lane and park it, no attempt used. A call that would have left too late holds nothing: it only
      // goes back, at its place, for a new start.
      const late = error instanceof LateSend;
      this.ctx.observer?.onDefer?.({ queue: throttle.name, reason: late ? 'rate' : 'upstream' });
      if (!late) await throttle.pause(lane, error.delayMs, error.scope);
      // Marked first (as the gate's park leaves it): should this process die between the park and the
      // requeue, lane repair brings the job back within seconds, not after the park's hour.
      await lanes.start(lane, job.id!, cost, { mode: 'mark' });
      await job.moveToDelayed(Date.now() + PARK_MS, token);
      // An upstream's "later" came from a call that was made: it stays counted in the spend quotas.
      await lanes.start(lane, job.id!, cost, { mode: 'requeue', slotUs: outcome.slotUs, callMade: !late });
      void throttle.recordEvent('deferred', job.id!, { ...whose(job), reason: late ? 'rate' : 'upstream', delayMs: error.delayMs });
      throw new DelayedError();
    } finally {
      this.exitHandler();
    }
  }
}

/** The lane and tenant an event of `job` names. */
function whose(job: Job<JobData>): { lane: string; tenant?: string } {
  return { lane: job.data.l, ...(job.data.t !== undefined ? { tenant: job.data.t } : {}) };
}

/** A handler's report to the learner; a Redis failure is returned, never thrown (the call was made: a retry would repeat it). */
async function reportUpstream(throttle: Throttle, lane: string, report: UpstreamReport, startedUs: number, scope?: UpstreamScope): Promise<LearnOutcome> {
  const learner = throttle.upstream;
  try {
    return await learner.report(lane, report, startedUs, scope ?? learner.scope);
  } catch (error) {
    return { event: 'ignored', scope: scope ?? learner.scope, error: (error as Error).message };
  }
}

/** Reads a throttle's published configuration, for a worker process that did not define the throttle. */
export async function publishedConfig(ctx: ThrottleContext, configKey: string, name: string): Promise<unknown> {
  const json = await ctx.bull().client.get(configKey);
  if (json === null) {
    throw new SluiceError('SLUICE_ERR_UNKNOWN_THROTTLE', `throttle '${name}' has no published configuration: call sluice.throttle('${name}', config) somewhere first, or pass it to the worker`);
  }
  return JSON.parse(json) as unknown;
}

/** The throttle's retention in BullMQ's terms. */
function keepOf(keep: { ageSeconds?: number | undefined; count?: number | undefined }): { age: number; count?: number } | { count: number } {
  if (keep.ageSeconds !== undefined) return keep.count !== undefined ? { age: keep.ageSeconds, count: keep.count } : { age: keep.ageSeconds };
  return { count: keep.count ?? 0 };
}
