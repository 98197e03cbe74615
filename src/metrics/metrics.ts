// Prometheus instruments (prom-client) for limiters, throttles and the HTTP layer. Labels are
// bounded: rule names and queue names come from configuration, outcomes from a fixed set; never a
// key, an identity or an IP.
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Algorithm } from '../limiters/policy.js';
import type { DecisionOutcome } from '../limiters/limiter.js';
import type { SubmitOutcome } from '../throttle/observer.js';

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
  private readonly laneDepth: Histogram<'queue'>;
  private readonly queueWaitSeconds: Histogram<'queue'>;
  private readonly startLatenessSeconds: Histogram<'queue'>;
  private readonly jobs: Counter<'queue' | 'outcome'>;
  private readonly deferrals: Counter<'queue' | 'reason'>;
  private readonly repairs: Counter<'queue'>;
  private readonly rulesReloads: Counter<'result'>;

  constructor(options: { registry?: Registry; defaultMetrics?: boolean } = {}) {
    this.registry = options.registry ?? new Registry();
    const registers = [this.registry];
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'sluice_process_' });
    this.decisions = new Counter({
      name: 'sluice_decisions_total',
      help: 'Decisions by rule (or queue:<name> for submits) and outcome',
      labelNames: ['rule', 'outcome'],
      registers,
    });
    this.decisionSeconds = new Histogram({
      name: 'sluice_decision_duration_seconds',
      help: 'Time of one limiter decision, Redis round trip included',
      labelNames: ['algorithm'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
      registers,
    });
    this.redisFailures = new Counter({
      name: 'sluice_redis_failed_decisions_total',
      help: 'Decisions Redis could not make in time, answered by the fail mode',
      labelNames: ['algorithm', 'mode'],
      registers,
    });
    this.redisErrors = new Counter({ name: 'sluice_redis_errors_total', help: 'Connection-level Redis errors', registers });
    this.lateDecisions = new Counter({
      name: 'sluice_late_decisions_total',
      help: 'Decisions whose script ran in Redis after the fail mode had answered (charged: the late run took the cost)',
      labelNames: ['algorithm', 'charged'],
      registers,
    });
    this.beforeReady = new Counter({
      name: 'sluice_decisions_before_ready_total',
      help: 'Decisions asked for before the Redis client was first ready (before sluice.ready() resolved)',
      labelNames: ['algorithm'],
      registers,
    });
    this.laneDepth = new Histogram({
      name: 'sluice_lane_depth',
      help: 'Queued cost units of the lane a submit went to, seen at admission',
      labelNames: ['queue'],
      buckets: [0, 1, 2, 5, 10, 25, 50, 100, 250, 1000, 10_000],
      registers,
    });
    this.queueWaitSeconds = new Histogram({
      name: 'sluice_queue_wait_seconds',
      help: 'Time from admission to start of a job',
      labelNames: ['queue'],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800],
      registers,
    });
    this.startLatenessSeconds = new Histogram({
      name: 'sluice_start_lateness_seconds',
      help: 'How late a job started after its reserved slot, in the worker (timer and event-loop jitter)',
      labelNames: ['queue'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1],
      registers,
    });
    this.jobs = new Counter({ name: 'sluice_jobs_total', help: 'Handler runs by outcome', labelNames: ['queue', 'outcome'], registers });
    this.deferrals = new Counter({
      name: 'sluice_job_deferrals_total',
      help: 'Jobs sent back to wait, by reason (rate gate or upstream), without using an attempt',
      labelNames: ['queue', 'reason'],
      registers,
    });
    this.repairs = new Counter({ name: 'sluice_lane_repairs_total', help: 'Queued units removed because their job was lost', labelNames: ['queue'], registers });
    this.rulesReloads = new Counter({ name: 'sluice_rules_reloads_total', help: 'Rules file reloads by result', labelNames: ['result'], registers });
  }

  /** One decision of a rule (or a queue submit) as the HTTP layer saw it. */
  recordRule(rule: string, outcome: RuleOutcome): void {
    this.decisions.inc({ rule, outcome });
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

  onLateDecision(event: { algorithm: Algorithm; charged: boolean }): void {
    this.lateDecisions.inc({ algorithm: event.algorithm, charged: String(event.charged) });
  }

  onSubmit(event: { queue: string; outcome: SubmitOutcome }): void {
    if (event.outcome === 'queue_full' || event.outcome === 'wait_too_long') this.recordRule(`queue:${event.queue}`, 'refused');
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

  onRepair(event: { queue: string; units: number }): void {
    this.repairs.inc({ queue: event.queue }, event.units);
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
