// The throttle façade: per-key bounded lanes drained at a fixed rate, with jobs on one shared BullMQ
// queue. Admission is one script call (exact bound, predicted start) that also writes the job, parked in
// BullMQ's delayed set (the admissions of one event-loop turn go as one script call, per slot on a cluster); the dispatcher (in every worker process) hands each job to the workers
// just before the start instant it chose, and the worker starts it at that instant.
// A throttle with `shards` > 1 is N such throttles of N hash tags (src/throttle/shards.ts); this one then
// routes each call to the shard of its lane or job, and its workers divide the global cap (share-allocator.ts).
// A submit's own parts (what it takes and answers, the parked job's texts, a reply's result): submit.ts.
import { Queue } from 'bullmq';
import { Cluster, type Redis } from 'ioredis';
import { SluiceError, isSluiceError } from '../errors.js';
import { deadlineError, withDeadline } from '../redis/deadline.js';
import { whenReady } from '../redis/connection.js';
import type { IdentityOptions } from '../redis/keys.js';
import { UpstreamLearner } from './upstream-learn.js';
import { parseThrottleConfig, timingOf, type ThrottleConfig, type ThrottleConfigInput, type ThrottleTiming } from './config.js';
import type { ThrottleContext } from './context.js';
import { jobStatusOf, type JobData, type JobStatus } from './job-status.js';
import { ThrottleKeys, laneMember } from './keys.js';
import { LaneScripts, type AdmitReply } from './lane-scripts.js';
import { laneLimitsOf, planOf, type LaneLimits } from './lane-limits.js';
import { LaneVariants } from './lane-variants.js';
import { payloadJson } from './payload.js';
import { HeldStarts } from './held-starts.js';
import { passGate } from './pass-gate.js';
import { Dispatcher, PARK_MS } from './dispatcher.js';
import { checkCost } from '../limiters/cost.js';
import { JobEventStream, ShardedJobEventStream, appendJobEvent, type JobEventDetail, type JobEventType } from './events.js';
import { waitForJob } from './wait.js';
import { FinishWatch } from './finish-watch.js';
import { quotaCounterSuffix, quotaWindows, type QuotaUse } from './quota.js';
import { Callbacks } from './callbacks.js';
import { shardOfJob, shardOfLane } from './shards.js';
import { ShareAllocator } from './share-allocator.js';
import { observeSubmit, parkOf, submitResultOf, type QuotaView, type SubmitOptions, type SubmitResult } from './submit.js';

export type { SubmitOptions, SubmitResult } from './submit.js';

export interface LaneInfo {
  /** Queued cost units (admitted, not yet started). */
  depth: number;
  /** Queued jobs. */
  jobs: number;
  capacity: number;
  /** The earliest instant (epoch ms) the lane's next start may happen. */
  nextStartAtMs: number;
  /** The queue's spend quotas and their use in the current window (this key's for a key quota). */
  quotas?: QuotaUse[];
}

export class Throttle {
  readonly name: string;
  readonly config: Readonly<ThrottleConfig>;
  readonly keys: ThrottleKeys;
  readonly timing: ThrottleTiming;
  private admitLanesCache: LaneScripts | undefined;
  private gateLanesCache: LaneScripts | undefined;
  private readonly variants: LaneVariants;
  private queue: Queue<JobData> | undefined;
  private preparing: Promise<void> | undefined;
  /** prepare() succeeded: a submit on a ready connection goes straight to its admission (a sharded one to its shard). */
  private prepared = false;
  /** The parked job's options JSON after its id (the same for every job of the throttle): attempts, backoff, the park. */
  private readonly optsTail: string;
  /** What a submit's deadline error names. */
  private readonly submitWhat: string;
  private dispatcherCache: Dispatcher | undefined;
  private upstreamCache: UpstreamLearner | undefined;
  private eventsCache: JobEventStream | undefined;
  private callbacksCache: Callbacks | undefined;
  private finishWatchCache: FinishWatch | undefined;
  /**
   * A sharded throttle's shards (`shards` > 1): each a whole throttle of its own hash tag; this one only
   * routes to them (src/throttle/shards.ts). Undefined for an unsharded throttle and for a shard itself.
   */
  private readonly shardList: Throttle[] | undefined;
  private allocatorCache: ShareAllocator | undefined;
  /** A shard's sibling shards, itself included: a pause of the whole throttle holds them all. */
  private siblings: readonly Throttle[] | undefined;
  /** quotaOf for a submit's reply (made once, not per submit). */
  private readonly quotaView = (index: number): QuotaView => this.quotaOf(index);

  /** @internal Made by `sluice.throttle(name, config)` (`shard`: one shard of a sharded throttle). */
  constructor(
    private readonly ctx: ThrottleContext,
    name: string,
    config: ThrottleConfigInput | ThrottleConfig,
    shard?: { index: number; count: number },
  ) {
    this.name = name;
    this.config = parseThrottleConfig(name, config);
    this.keys = new ThrottleKeys(ctx.keys, name, shard);
    const timing = timingOf(this.config);
    // A shard's global meter runs at its share of the cap, written by the share allocator; until one
    // is written (or once it expired) at an equal split, which never exceeds the cap in total.
    if (shard && timing.globalIntervalUs > 0) timing.globalIntervalUs = Math.round(1e6 / Math.floor(this.config.globalRatePerSecond! / shard.count));
    this.timing = timing;
    this.variants = new LaneVariants(ctx, this.keys, this.config);
    this.submitWhat = `throttle '${name}' submit`;
    // As queue.add(name, data, { jobId, delay: PARK_MS, attempts, backoff }) stores them. Retention is set
    // once on the workers: in every job's options it would make each job's hash too big for Redis's
    // compact encoding (~690 B a job instead of ~200).
    const { attempts, backoff } = this.config;
    this.optsTail = `,"delay":${PARK_MS},"attempts":${attempts}${backoff ? `,"backoff":${JSON.stringify({ type: backoff.type, delay: backoff.delayMs })}` : ''}}`;
    if (!shard && this.config.shards > 1) {
      this.shardList = Array.from({ length: this.config.shards }, (_, index) => new Throttle(ctx, name, this.config, { index, count: this.config.shards }));
      for (const s of this.shardList) s.siblings = this.shardList;
    }
  }

  /** The throttles that hold the jobs: a sharded throttle's shards, else this one. @internal */
  get shards(): readonly Throttle[] {
    return this.shardList ?? [this];
  }

  /** The throttle (shard) that holds lane `laneId`: this one unless sharded. @internal */
  forLane(laneId: string): Throttle {
    return this.shardList ? this.shardList[shardOfLane(laneId, this.shardList.length)]! : this;
  }

  /** The throttle (shard) that holds job `jobId`; undefined when the id names no shard of this throttle. @internal */
  forJob(jobId: string): Throttle | undefined {
    if (!this.shardList) return this;
    const i = shardOfJob(jobId, this.shardList.length);
    return i === undefined ? undefined : this.shardList[i];
  }

  /**
   * A sharded throttle's division of its global cap among its shards (run by its workers). @internal
   * Undefined unless sharded with a global cap.
   */
  get shareAllocator(): ShareAllocator | undefined {
    if (!this.shardList || this.timing.globalIntervalUs === 0) return undefined;
    this.allocatorCache ??= new ShareAllocator(this.ctx.bull().client, this.ctx.bull().scripts, this.keys, this.shardList, this.config.globalRatePerSecond!);
    return this.allocatorCache;
  }

  /** This process's jobs told their starts and not started yet, by lane (held-starts.ts). @internal */
  readonly heldStarts = new HeldStarts();

  /** Lane scripts on the admission client (a submit's admission writes its job too). */
  private get admitLanes(): LaneScripts {
    this.admitLanesCache ??= new LaneScripts(this.ctx.admission().scripts, this.keys, this.timing, this.config.capacity, this.config.burst, () => this.ctx.overrides?.()?.version ?? 0);
    return this.admitLanesCache;
  }

  /** @internal Lane scripts on the resilient client: the outflow gate and repairs must wait out a Redis restart. */
  get gateLanes(): LaneScripts {
    this.gateLanesCache ??= new LaneScripts(this.ctx.bull().scripts, this.keys, this.timing, this.config.capacity, this.config.burst, () => this.ctx.overrides?.()?.version ?? 0);
    return this.gateLanesCache;
  }

  /** @internal What the upstream's answers teach (lua/upstream-learn.lua), on the resilient client. */
  get upstream(): UpstreamLearner {
    this.upstreamCache ??= new UpstreamLearner(this.ctx.bull().scripts, this.keys, this.timing, this.config, (laneId, ms, scope) => this.pause(laneId, ms, scope), this.keys.shard.count);
    return this.upstreamCache;
  }

  /** @internal This process's dispatcher of the throttle (runs while a worker or a schedule() call uses it). */
  get dispatcher(): Dispatcher {
    this.dispatcherCache ??= new Dispatcher({ lanes: this.gateLanes, keys: this.keys, client: this.ctx.bull().client, horizonUs: this.timing.leadUs, deliveryUs: this.timing.deliveryUs });
    return this.dispatcherCache;
  }

  /**
   * The throttle's job transitions (admitted, started, deferred, completed, failed, cancelled,
   * progress), read from Redis: every process's submits and workers, not only this one's.
   * `events.subscribe(listener, { jobId })` calls `listener` for each event from then on.
   */
  get events(): JobEventStream {
    const shards = this.shardList;
    this.eventsCache ??= shards
      ? new ShardedJobEventStream(this.keys.events, shards.map((s) => s.events), (jobId) => shardOfJob(jobId, shards.length))
      : new JobEventStream(() => this.ctx.bull().client, this.keys.events);
    return this.eventsCache;
  }

  /**
   * Calls `wake` whenever the throttle's periodic look at the jobs being waited on finds `jobId` finished
   * or gone, until the returned function is called: the backstop for a lost final event, one pipeline a
   * look for every waiter of the process (src/throttle/finish-watch.ts). @internal
   */
  watchFinish(jobId: string, wake: () => void): () => void {
    if (this.shardList) return this.forJob(jobId)?.watchFinish(jobId, wake) ?? (() => undefined);
    this.finishWatchCache ??= new FinishWatch(() => this.ctx.bull().client, (id) => this.keys.job(id));
    return this.finishWatchCache.watch(jobId, wake);
  }

  /** The throttle's callback deliveries. @internal */
  get callbacks(): Callbacks {
    this.callbacksCache ??= new Callbacks(this.keys, () => this.ctx.bull().client);
    return this.callbacksCache;
  }

  /**
   * Cost units of jobs whose worker did not say they started within a second of their start (a dead or
   * stalled worker), taken for started since the queue's state began: every shard's count, summed
   * (docs/algorithms.md, "Admission").
   */
  async silentUnits(): Promise<number> {
    // On the admission connection, within the submit deadline: a scrape while Redis is down fails fast
    // (its series left out) instead of waiting in a reconnecting client's queue.
    const counts = await this.withinDeadline('silent units', () => Promise.all(this.shards.map((s) => this.ctx.admission().client.hget(s.keys.global, 'sl'))));
    return counts.reduce((n, v) => n + Number(v ?? 0), 0);
  }

  /** Appends a transition of `jobId` to the throttle's event stream (never throws). @internal */
  recordEvent(type: JobEventType, jobId: string, detail: JobEventDetail = {}, client: Redis | Cluster = this.ctx.bull().client): Promise<void> {
    if (this.shardList) return this.forJob(jobId)?.recordEvent(type, jobId, detail, client) ?? Promise.resolve();
    return appendJobEvent(client, this.keys.events, type, jobId, detail);
  }

  /**
   * Waits until `jobId` is finished (completed, or failed for good) or `timeoutMs` passes, and returns
   * its status then (still queued or active when the wait ended first); null when the job is unknown,
   * was cancelled, or is not `tenant`'s. Woken by the job's events; its status is read again every few
   * seconds too, so a lost event only delays the answer.
   */
  waitForJob(jobId: string, options: { timeoutMs: number; tenant?: string; signal?: AbortSignal }): Promise<JobStatus | null> {
    if (this.shardList) return this.forJob(jobId)?.waitForJob(jobId, options) ?? Promise.resolve(null);
    return waitForJob(this, jobId, options);
  }

  /**
   * Resolves with the result of `jobId` once it completed; rejects with SLUICE_ERR_JOB_FAILED (details:
   * failedReason, attemptsMade) when it failed for good, SLUICE_ERR_WAIT_TIMEOUT when `timeoutMs` passed
   * first (details: state), and SLUICE_ERR_NOT_FOUND when the job is unknown or was cancelled.
   */
  async waitForResult<R = unknown>(jobId: string, options: { timeoutMs: number; tenant?: string }): Promise<R> {
    const status = await this.waitForJob(jobId, options);
    if (!status) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `throttle '${this.name}': no job '${jobId}' (unknown, cancelled, or removed after its retention)`);
    if (status.state === 'completed') return status.result as R;
    if (status.state === 'failed') {
      throw new SluiceError('SLUICE_ERR_JOB_FAILED', `throttle '${this.name}': job '${jobId}' failed: ${status.failedReason ?? 'no reason given'}`, {
        details: { failedReason: status.failedReason, attemptsMade: status.attemptsMade },
      });
    }
    throw new SluiceError('SLUICE_ERR_WAIT_TIMEOUT', `throttle '${this.name}': job '${jobId}' is still ${status.state} after ${options.timeoutMs} ms`, {
      details: { state: status.state },
    });
  }

  /**
   * Holds a lane, or (`global`) the whole throttle: on a sharded throttle every shard. Resolves with the
   * µs starts resume at. @internal
   */
  async pause(laneId: string, ms: number, scope: 'lane' | 'global'): Promise<number> {
    const all = scope === 'global' ? (this.siblings ?? this.shardList) : undefined;
    if (all) return Math.max(...(await Promise.all(all.map((s) => s.gateLanes.pause(laneId, ms, 'global')))));
    return this.forLane(laneId).gateLanes.pause(laneId, ms, scope);
  }

  /**
   * Sets a lane's pacing to its current limits (after an operator's override changed them, at control
   * version `version`). @internal
   */
  async applyLimits(laneId: string, limits: LaneLimits, version: number): Promise<boolean> {
    if (this.shardList) return this.forLane(laneId).applyLimits(laneId, limits, version);
    return this.variants.gate(limits).setLimits(laneId, version);
  }

  /** The settings `laneId` runs at now: its plan's (or the throttle's), with an operator's override on top. @internal */
  limitsOf(laneId: string, plan?: string): LaneLimits {
    return laneLimitsOf(this.config, planOf(this.config, plan)?.limits, this.ctx.overrides?.()?.override(this.name, laneId));
  }

  /** The plan name a submit naming `plan` gets here (undefined: the throttle's own settings). */
  planName(plan?: string): string | undefined {
    return planOf(this.config, plan)?.name;
  }

  /** Lane scripts for the outflow gate at the lane's current limits (plan and override). @internal */
  gateLanesFor(laneId: string, plan?: string): LaneScripts {
    if (this.shardList) return this.forLane(laneId).gateLanesFor(laneId, plan);
    return this.variants.gate(this.limitsOf(laneId, plan));
  }

  /** Admits `payload` into `key`'s lane, or refuses with the exact time until it would be admitted. */
  async submit(key: string, payload: unknown, options: SubmitOptions = {}): Promise<SubmitResult> {
    const laneId = this.keys.laneId(key, options);
    if (this.shardList) {
      // The configuration is published under the throttle's own tag too: workers elsewhere find the shards there.
      // Until it is published (a deadline timer per submit after that would be work for nothing).
      if (!this.prepared) await this.withinDeadline('submit', () => this.prepare());
      return this.forLane(laneId).submit(key, payload, options);
    }
    const plan = this.planName(options.plan);
    const limits = this.limitsOf(laneId, plan);
    const cost = checkCost(options.cost, limits.capacity, 'the lane capacity', 'it could never be admitted');
    const payloadText = payloadJson(payload, this.config.maxPayloadBytes);
    const jobId = this.keys.jobId(options.id);
    const ms = this.config.submitTimeoutMs;
    const what = this.submitWhat;
    // The admission writes the job too, parked in BullMQ's delayed set (lua/throttle-admit.lua): one
    // atomic call, so no job ever lacks its lane unit and no unit its job, whatever fails in between.
    const park = parkOf(this.name, laneId, cost, payloadText, plan, this.optsTail, options);
    const lanes = this.variants.admit(limits);
    const now = nowArg(options.nowMs);
    const idempotent = options.id !== undefined;
    let reply: AdmitReply;
    const client = this.ctx.admission().client;
    if (this.prepared && client.status === 'ready' && !(client instanceof Cluster)) {
      if (this.ctx.isClosed()) throw new SluiceError('SLUICE_ERR_CLOSED', 'this sluice instance is closed');
      // The hot path: one object per call carries its deadline (lane-scripts.ts, AdmitCall).
      reply = await lanes.admit(laneId, jobId, cost, idempotent, now, plan ?? '', park, { ms, what });
    } else {
      // First call, a reconnect, a cluster: wait for the connection and the queue within the same deadline.
      const begun = performance.now();
      await this.withinDeadline('submit', () => this.prepare());
      const left = Math.floor(ms - (performance.now() - begun));
      if (left <= 0) throw deadlineError(what, ms);
      reply = await lanes.admit(laneId, jobId, cost, idempotent, now, plan ?? '', park, { ms: left, what });
    }
    const observer = this.ctx.observer;
    if (observer) observeSubmit(observer, this.name, reply, cost, this.quotaView);
    if (reply.kind !== 'finished-duplicate') return submitResultOf(reply, jobId, limits.capacity, this.quotaView);
    const job = await this.withinDeadline('submit', () => this.queue!.getJob(jobId));
    return { admitted: true, jobId, startsAtMs: job?.data?.s ?? Math.ceil(reply.nowUs / 1000), position: 0, duplicate: true };
  }

  /**
   * Admits an existing job's member into its lane again (an operator's retry of a failed job): the
   * lane's bound and max wait hold as for a submit. The caller moves the job back, or releases.
   * @internal
   */
  async readmit(laneId: string, jobId: string, cost: number, plan?: string): Promise<AdmitReply> {
    if (this.shardList) return this.forLane(laneId).readmit(laneId, jobId, cost, plan);
    const limits = this.limitsOf(laneId, plan);
    return this.withinDeadline('readmit', async () => {
      await this.prepare();
      return this.variants.admit(limits).admit(laneId, jobId, cost, false, '', plan ?? '');
    });
  }

  /**
   * A job's state, attempts, result or failure, and predicted start; null when unknown (or expired),
   * and when `tenant` is given and the job is not that tenant's (its existence is not revealed).
   */
  async job(jobId: string, options: { tenant?: string } = {}): Promise<JobStatus | null> {
    if (this.shardList) return this.forJob(jobId)?.job(jobId, options) ?? null;
    const status = await this.withinDeadline('job', () => this.readJob(jobId));
    if (status && options.tenant !== undefined && status.tenant !== options.tenant) return null;
    if (status?.state === 'queued' && status.lane !== undefined && this.config.quotas?.length) status.quotas = await this.quotaUse(status.lane);
    return status;
  }

  private async readJob(jobId: string): Promise<JobStatus | null> {
    await this.prepare();
    let job = await this.queue!.getJob(jobId);
    if (!job) return null;
    const state = await job.getState();
    // The record was read before the state: a job that finished in between is read again, so a
    // finished state never comes with an unfinished record (no result, no finish time).
    if ((state === 'completed' || state === 'failed') && !job.finishedOn) {
      job = await this.queue!.getJob(jobId);
      if (!job) return null;
    }
    const status = jobStatusOf(job, state);
    if (job.data?.cb !== undefined) {
      const attempts = await this.callbacks.attempts(jobId);
      status.callback = { url: job.data.cb, delivered: attempts.some((a) => a.delivered), attempts };
    }
    return status;
  }

  /**
   * Resolves once this throttle admits at full speed: its admission client connected, its BullMQ queue
   * made and its configuration published (what the first submit of a process would otherwise do, in
   * its own latency). Optional: every call does it when needed.
   */
  async ready(): Promise<void> {
    await this.withinDeadline('ready', () => this.prepare());
    if (this.shardList) await Promise.all(this.shardList.map((s) => s.ready()));
  }

  /** The configured spend quota at `index` (as a refusal names it). @internal */
  quotaOf(index: number): QuotaView {
    const q = this.config.quotas?.[index];
    if (!q) throw new SluiceError('SLUICE_ERR_SCRIPT', `throttle '${this.name}' has no quota ${index}`);
    return { scope: q.scope, period: q.period, unit: q.unit, limit: q.limit, timeZone: q.timeZone };
  }

  /**
   * Every spend quota's use in its current window: a key quota's for `laneId`, a queue quota's for the
   * whole queue (`laneId` undefined: the queue quotas only). `nowMs`: the instant (default: now).
   */
  async quotaUse(laneId: string | undefined, nowMs = Date.now()): Promise<QuotaUse[]> {
    // Queue-scope quotas need one shard (config.ts): a sharded throttle's quotas are its lanes'.
    if (this.shardList) return laneId === undefined ? [] : this.forLane(laneId).quotaUse(laneId, nowMs);
    const quotas = (this.config.quotas ?? []).map((q, index) => ({ q, index })).filter(({ q }) => laneId !== undefined || q.scope === 'queue');
    if (quotas.length === 0) return [];
    const windows = quotas.map(({ q }) => quotaWindows(q, nowMs));
    const keys = quotas.map(({ q, index }, i) => (q.scope === 'key' ? this.keys.lane(laneId!) : this.keys.global) + quotaCounterSuffix(index, windows[i]!.startMs));
    // One slot (the throttle's hash tag): one MGET on a cluster too.
    const used = await this.withinDeadline('quota', () => this.ctx.admission().client.mget(...keys));
    return quotas.map(({ q }, i) => ({
      scope: q.scope,
      period: q.period,
      unit: q.unit,
      limit: q.limit,
      used: Number(used[i] ?? 0),
      resetsAtMs: windows[i]!.endMs,
      timeZone: q.timeZone,
    }));
  }

  /** The state of `key`'s lane. */
  async lane(key: string, options: IdentityOptions & { nowMs?: number; plan?: string } = {}): Promise<LaneInfo> {
    const laneId = this.keys.laneId(key, options);
    if (this.shardList) return this.forLane(laneId).lane(key, options);
    const limits = this.limitsOf(laneId, this.planName(options.plan));
    const [s, quotas] = await Promise.all([
      this.withinDeadline('lane', () => this.admitLanes.state(laneId, nowArg(options.nowMs))),
      this.quotaUse(laneId, options.nowMs),
    ]);
    return {
      depth: s.depth,
      jobs: s.jobs,
      capacity: limits.capacity,
      nextStartAtMs: Math.ceil(Math.max(s.nowUs, s.slotUs) / 1000),
      ...(quotas.length > 0 ? { quotas } : {}),
    };
  }

  /**
   * In-process convenience (Bottleneck-like): waits for a slot in `key`'s lane — the same lane, bound
   * and rate that queued jobs use, paced across every process — then runs `fn` here and resolves with
   * its result. Refused admission rejects with SLUICE_ERR_QUEUE_FULL (details: reason, retryAfterMs).
   * Nothing survives this process: for durable work use submit() and a worker.
   */
  async schedule<T>(key: string, fn: () => T | Promise<T>, options: Omit<SubmitOptions, 'id' | 'nowMs' | 'tenant' | 'plan'> = {}): Promise<T> {
    const cost = checkCost(options.cost, this.config.capacity, 'the lane capacity', 'it could never be admitted');
    const laneId = this.keys.laneId(key, options);
    if (this.shardList) return this.forLane(laneId).schedule(key, fn, options);
    const jobId = `p${this.keys.jobId().slice(1)}`;
    const reply = await this.withinDeadline('schedule', async () => {
      await this.prepare();
      return this.admitLanes.admit(laneId, jobId, cost, false, '');
    });
    if (reply.kind === 'queue_full' || reply.kind === 'wait_too_long' || reply.kind === 'quota_exhausted') {
      const retryAfterMs = Math.ceil(reply.retryUs / 1000);
      throw new SluiceError('SLUICE_ERR_QUEUE_FULL', `throttle '${this.name}': ${reply.kind}, retry in ${retryAfterMs} ms`, {
        details: { reason: reply.kind, retryAfterMs },
      });
    }
    if (reply.kind !== 'admitted') throw new SluiceError('SLUICE_ERR_SCRIPT', `unexpected admission ${reply.kind}`);
    // The dispatcher (this process's, or any other's) gives the job its start; it waits here for it.
    const entry = `${laneMember(jobId, cost)}|${laneId}`;
    const dispatcher = this.dispatcher;
    dispatcher.acquire();
    try {
      for (;;) {
        await dispatcher.waitFor(entry);
        // In-process: every wait is spent here; fn runs in the same step as the lateness check.
        const outcome = await passGate(
          this.gateLanes,
          laneId,
          jobId,
          cost,
          this.timing,
          (slotUs) => {
            // Its unit of the lane is free from now (lua/throttle-started.lua); fn runs in the same step.
            void this.gateLanes.started(laneId, jobId, cost, slotUs).catch(() => undefined);
            return fn();
          },
          undefined,
          undefined,
          this.heldStarts,
        );
        if (outcome.started) return await outcome.result;
        // It missed its start: back to its lane, dispatched again at its turn (no call was made).
        await this.gateLanes.start(laneId, jobId, cost, { mode: 'requeue', slotUs: outcome.slotUs });
      }
    } catch (error) {
      // Give the unit back if we never got to start (the gate call itself may have failed).
      await this.admitLanes.release(laneId, [laneMember(jobId, cost)]).catch(() => undefined);
      throw error;
    } finally {
      dispatcher.forget(entry);
      await dispatcher.release();
    }
  }

  /** The BullMQ queue (created on first use). */
  async bullQueue(): Promise<Queue<JobData>> {
    await this.prepare();
    return this.queue!;
  }

  async close(): Promise<void> {
    await this.allocatorCache?.close();
    if (this.shardList) await Promise.all(this.shardList.map((s) => s.close()));
    await this.eventsCache?.close();
    this.finishWatchCache?.close();
    await this.callbacksCache?.close();
    await this.dispatcherCache?.close();
    await this.queue?.close();
  }

  /** Creates the queue and publishes the configuration for workers in other processes, once. */
  private prepare(): Promise<void> {
    this.preparing ??= (async () => {
      // The admission client: a job add is never re-sent after a reconnect (see confirmEnqueued).
      const { client, scripts } = this.ctx.admission();
      // The client has no offline queue: before its first connection is up (an admin read of a queue
      // no submit has touched yet in this process) a command would fail at once, and the queue sends
      // one (INFO) as soon as it is made: on a cluster that was an unhandled "Connection is closed".
      await whenReady(client, 2_000);
      this.queue = new Queue<JobData>(this.name, { connection: client, prefix: this.keys.bullPrefix });
      this.queue.on('error', () => undefined); // connection errors surface on the calls themselves
      // The admission script in Redis before the first submit (not a NOSCRIPT and an EVAL of its source
      // then); a failure here only leaves that to the first submit.
      const loaded = scripts.load(['throttle-admit']).catch(() => undefined);
      await Promise.all([client.set(this.keys.config, JSON.stringify(this.config)), loaded]);
      this.prepared = true;
    })().catch((error: unknown) => {
      this.preparing = undefined;
      throw error;
    });
    return this.preparing;
  }

  private withinDeadline<T>(what: string, work: () => Promise<T>): Promise<T> {
    if (this.ctx.isClosed()) return Promise.reject(new SluiceError('SLUICE_ERR_CLOSED', 'this sluice instance is closed'));
    const ms = this.config.submitTimeoutMs;
    return withDeadline(() => whenReady(this.ctx.admission().client, ms).then(work), ms, `throttle '${this.name}' ${what}`).catch((error: unknown) => {
      if (isSluiceError(error)) throw error;
      throw new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', `throttle '${this.name}' ${what}: ${(error as Error).message}`, { cause: error });
    });
  }

}

function nowArg(nowMs: number | undefined): string {
  return nowMs === undefined ? '' : String(Math.round(nowMs * 1000));
}
