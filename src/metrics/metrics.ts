// Prometheus instruments (prom-client) for limiters, throttles and the HTTP layer. Labels are
// bounded: rule names and queue names come from configuration, outcomes from a fixed set; never a
// key, an identity or an IP.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Algorithm } from '../limiters/policy.js';
import type { DecisionOutcome } from '../limiters/limiter.js';
import type { IgnoreReason, SubmitOutcome, UpstreamEvent } from '../throttle/observer.js';
import type { QuotaUse } from '../throttle/quota.js';

/** Outcomes of a decision as the HTTP layer reports them (a queued submit is 'deferred'). */
export type RuleOutcome = 'allowed' | 'deferred' | 'duplicate' | 'refused' | 'shadow-refused' | 'fail-open' | 'fail-closed';

/** Everything sluice measures, on one registry. Also a SluiceObserver: pass it as createSluice's `observer`. */
export class Metrics {
  readonly registry: Registry;
  private readonly decisions: Counter<'rule' | 'outcome'>;
  private readonly decisionSeconds: Histogram<'algorithm'>;
  private readonly redisFailures: Counter<'algorithm' | 'mode'>;
  private readonly redisErrors: Counter;
  private readonly lateDecisions: Counter<'algorithm' | 'charged'>;
  private readonly beforeReady: Counter<'algorithm'>;
  private readonly denyCacheHits: Counter<'algorithm'>;
  /**
   * Decisions counted here per rule and outcome and added to the counter when it is read (its
   * `collect`, at every scrape): prom-client hashes and validates the label object on every inc(),
   * a child's too, and this runs for every rule of every request.
   */
  private readonly pendingDecisions = new Map<string, Map<RuleOutcome, { labels: { rule: string; outcome: RuleOutcome }; n: number }>>();
  private readonly laneDepth: Histogram<'queue'>;
  private readonly queueWaitSeconds: Histogram<'queue'>;
  private readonly startLatenessSeconds: Histogram<'queue'>;
  private readonly jobs: Counter<'queue' | 'outcome'>;
  private readonly deferrals: Counter<'queue' | 'reason'>;
  private readonly repairs: Counter<'queue'>;
  private readonly upstreamReports: Counter<'queue' | 'event'>;
  private readonly upstreamIgnored: Counter<'queue' | 'reason'>;
  private readonly costReconciled: Counter<'queue' | 'direction'>;
  private readonly rulesReloads: Counter<'result'>;
  private readonly waitsOpen: Gauge<'kind'>;
  private readonly quotaRefusals: Counter<'queue' | 'scope' | 'period'>;
  private readonly workerErrors: Counter<'queue'>;
  /** Readers of each queue's queue-scoped quota use, read at every scrape. */
  private readonly quotaReaders = new Map<string, () => Promise<readonly QuotaUse[]>>();
  private readonly silentReaders = new Map<string, () => Promise<number>>();
  private readonly streamsDropped: Counter;

  constructor(options: { registry?: Registry; defaultMetrics?: boolean } = {}) {
    this.registry = options.registry ?? new Registry();
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'sluice_process_' });
    const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Counter<L>({ name, help, labelNames, registers: [this.registry] });
    const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
      new Histogram<L>({ name, help, labelNames, buckets, registers: [this.registry] });
    const pending = this.pendingDecisions;
    this.decisions = new Counter({
      name: 'sluice_decisions_total',
      help: 'Decisions by rule (or queue:<name> for submits) and outcome',
      labelNames: ['rule', 'outcome'],
      registers: [this.registry],
      collect() {
        for (const byOutcome of pending.values()) {
          for (const slot of byOutcome.values()) {
            if (slot.n === 0) continue;
            this.inc(slot.labels, slot.n);
            slot.n = 0;
          }
        }
      },
    });
    this.decisionSeconds = histogram('sluice_decision_duration_seconds', 'Time of one limiter decision, Redis round trip included', ['algorithm'], [
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    ]);
    this.redisFailures = counter('sluice_redis_failed_decisions_total', 'Decisions Redis could not make in time, answered by the fail mode', ['algorithm', 'mode']);
    this.redisErrors = counter('sluice_redis_errors_total', 'Connection-level Redis errors', []);
    this.lateDecisions = counter(
      'sluice_late_decisions_total',
      'Decisions whose script ran in Redis after the fail mode had answered (charged: the late run took the cost)',
      ['algorithm', 'charged'],
    );
    this.beforeReady = counter(
      'sluice_decisions_before_ready_total',
      'Decisions asked for before the Redis client was first ready (before sluice.ready() resolved)',
      ['algorithm'],
    );
    this.denyCacheHits = counter(
      'sluice_deny_cache_hits_total',
      'Calls refused from the deny cache (a key Redis refused until T, refused in-process until T) without a Redis call',
      ['algorithm'],
    );
    this.laneDepth = histogram('sluice_lane_depth', 'Queued cost units of the lane a submit went to, seen at admission', ['queue'], [
      0, 1, 2, 5, 10, 25, 50, 100, 250, 1000, 10_000,
    ]);
    this.queueWaitSeconds = histogram('sluice_queue_wait_seconds', 'Time from admission to start of a job', ['queue'], [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800]);
    this.startLatenessSeconds = histogram(
      'sluice_start_lateness_seconds',
      'How late a job started after its reserved slot, in the worker (timer and event-loop jitter)',
      ['queue'],
      [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1],
    );
    this.jobs = counter('sluice_jobs_total', 'Handler runs by outcome', ['queue', 'outcome']);
    this.deferrals = counter('sluice_job_deferrals_total', 'Jobs sent back to wait, by reason (rate gate or upstream), without using an attempt', ['queue', 'reason']);
    this.repairs = counter('sluice_lane_repairs_total', 'Queued units removed because their job was lost', ['queue']);
    this.upstreamReports = counter('sluice_upstream_reports_total', "Upstream answers reported by handlers, by how they were read (the upstream's limit is learned from them)", ['queue', 'event']);
    this.upstreamIgnored = counter('sluice_upstream_headers_ignored_total', 'Upstream rate-limit header values not used (malformed, negative, absurd, ...), or capped', ['queue', 'reason']);
    this.costReconciled = counter('sluice_cost_reconciled_units_total', "Cost units charged or refunded after jobs reported an actual cost other than their admitted one", ['queue', 'direction']);
    this.rulesReloads = counter('sluice_rules_reloads_total', 'Rules file reloads by result', ['result']);
    this.waitsOpen = new Gauge({ name: 'sluice_job_waits_open', help: 'HTTP requests held open for a job: long-polls (?wait=) and SSE event streams', labelNames: ['kind'], registers: [this.registry] });
    this.quotaRefusals = counter('sluice_quota_refusals_total', 'Submits refused because a spend quota of their queue (scope key or queue) was used up for its window (day or month)', [
      'queue',
      'scope',
      'period',
    ]);
    this.workerErrors = counter('sluice_worker_errors_total', "Errors BullMQ's worker reported: lost connections, and calls Redis refused that it does not retry", ['queue']);
    const readers = this.quotaReaders;
    new Gauge<'queue' | 'period' | 'unit'>({
      name: 'sluice_quota_used',
      help: "Calls or cost units started in the current window of each queue-wide spend quota (read from Redis at each scrape)",
      labelNames: ['queue', 'period', 'unit'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [queue, read] of readers) {
          // A scrape must not fail for one unreachable Redis: that queue's series is left out this time.
          const uses = await read().catch(() => []);
          for (const u of uses) this.set({ queue, period: u.period, unit: u.unit }, u.used);
        }
      },
    });
    const silent = this.silentReaders;
    new Gauge<'queue'>({
      name: 'sluice_throttle_silent_units',
      help: "Cost units of jobs whose worker did not say they started within a second of their start (dead or stalled workers), taken for started since the queue's state began (read from Redis at each scrape)",
      labelNames: ['queue'],
      registers: [this.registry],
      async collect() {
        this.reset();
        // All queues at once: during an outage each read waits up to its deadline, and a scrape must not
        // wait that once per queue. As sluice_quota_used: an unreachable Redis leaves its series out.
        const reads = await Promise.all([...silent].map(async ([queue, read]) => [queue, await read().catch(() => undefined)] as const));
        for (const [queue, units] of reads) if (units !== undefined) this.set({ queue }, units);
      },
    });
    this.streamsDropped = counter('sluice_job_event_streams_dropped_total', 'SSE job event streams closed because the client did not read (its buffer passed the bound)', []);
  }

  /** One decision of a rule (or a queue submit) as the HTTP layer saw it. */
  recordRule(rule: string, outcome: RuleOutcome): void {
    let byOutcome = this.pendingDecisions.get(rule);
    if (!byOutcome) {
      byOutcome = new Map();
      this.pendingDecisions.set(rule, byOutcome);
    }
    const slot = byOutcome.get(outcome);
    if (slot) slot.n++;
    else byOutcome.set(outcome, { labels: { rule, outcome }, n: 1 });
  }

  recordRulesReload(result: 'applied' | 'refused'): void {
    this.rulesReloads.inc({ result });
  }

  // --- SluiceObserver ---------------------------------------------------------------------------

  onDecision(event: { algorithm: Algorithm; outcome: DecisionOutcome; latencyMs: number }): void {
    this.decisionSeconds.observe({ algorithm: event.algorithm }, event.latencyMs / 1000);
    if (event.outcome === 'fail-open' || event.outcome === 'fail-closed') {
      this.redisFailures.inc({ algorithm: event.algorithm, mode: event.outcome === 'fail-open' ? 'open' : 'closed' });
    }
  }

  onRedisError(): void {
    this.redisErrors.inc();
  }

  onDecisionBeforeReady(event: { algorithm: Algorithm }): void {
    this.beforeReady.inc({ algorithm: event.algorithm });
  }

  onDenyCacheHit(event: { algorithm: Algorithm }): void {
    this.denyCacheHits.inc({ algorithm: event.algorithm });
  }

  onLateDecision(event: { algorithm: Algorithm; charged: boolean }): void {
    this.lateDecisions.inc({ algorithm: event.algorithm, charged: String(event.charged) });
  }

  onSubmit(event: { queue: string; outcome: SubmitOutcome }): void {
    if (event.outcome === 'queue_full' || event.outcome === 'wait_too_long' || event.outcome === 'quota_exhausted') this.recordRule(`queue:${event.queue}`, 'refused');
    else this.recordRule(`queue:${event.queue}`, event.outcome === 'duplicate' ? 'duplicate' : 'deferred');
  }

  onLaneDepth(event: { queue: string; depth: number }): void {
    this.laneDepth.observe({ queue: event.queue }, event.depth);
  }

  onStart(event: { queue: string; queuedMs: number; lateMs: number; retry: boolean }): void {
    if (!event.retry) this.queueWaitSeconds.observe({ queue: event.queue }, event.queuedMs / 1000);
    this.startLatenessSeconds.observe({ queue: event.queue }, event.lateMs / 1000);
  }

  onDefer(event: { queue: string; reason: 'rate' | 'upstream' }): void {
    this.deferrals.inc({ queue: event.queue, reason: event.reason });
  }

  onFinish(event: { queue: string; outcome: 'completed' | 'failed' | 'retrying' }): void {
    this.jobs.inc({ queue: event.queue, outcome: event.outcome });
  }

  onUpstream(event: { queue: string; event: UpstreamEvent; ignored: readonly { reason: IgnoreReason }[] }): void {
    this.upstreamReports.inc({ queue: event.queue, event: event.event });
    for (const i of event.ignored) this.upstreamIgnored.inc({ queue: event.queue, reason: i.reason });
  }

  onReconcile(event: { queue: string; direction: 'charge' | 'refund'; units: number }): void {
    this.costReconciled.inc({ queue: event.queue, direction: event.direction }, event.units);
  }

  onWorkerError(event: { queue: string }): void {
    this.workerErrors.inc(event);
  }

  onQuotaRefusal(event: { queue: string; scope: 'key' | 'queue'; period: 'day' | 'month' }): void {
    this.quotaRefusals.inc(event);
  }

  /** Reads `queue`'s count of units taken for started at every scrape (`sluice_throttle_silent_units`). */
  watchSilentUnits(queue: string, read: () => Promise<number>): void {
    this.silentReaders.set(queue, read);
  }

  /** Reads `queue`'s queue-wide quota use at every scrape (`sluice_quota_used`). */
  watchQuotas(queue: string, read: () => Promise<readonly QuotaUse[]>): void {
    this.quotaReaders.set(queue, read);
  }

  onRepair(event: { queue: string; units: number }): void {
    this.repairs.inc({ queue: event.queue }, event.units);
  }

  /** A long-poll or an SSE stream began (HTTP). */
  onWaitOpened(kind: 'long_poll' | 'sse'): void {
    this.waitsOpen.inc({ kind });
  }

  onWaitClosed(kind: 'long_poll' | 'sse'): void {
    this.waitsOpen.dec({ kind });
  }

  /** An SSE client that did not read was disconnected. */
  onEventStreamDropped(): void {
    this.streamsDropped.inc();
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
