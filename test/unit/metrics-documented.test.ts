// docs/operations.md against src/metrics/metrics.ts: every metric the Metrics class registers has a row
// in the doc's metrics table naming each of its labels, and every label value it can emit (all of
// every outcome, mode, reason and result set, driven through its public methods) is written in that
// row; the table names no metric that does not exist.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { DecisionOutcome } from '../../src/limiters/limiter.js';
import { ALGORITHMS, type Algorithm } from '../../src/limiters/policy.js';
import { Metrics, type RuleOutcome } from '../../src/metrics/metrics.js';
import type { IgnoreReason, SubmitOutcome, ThrottleObserver, UpstreamEvent } from '../../src/throttle/observer.js';

const DOC = new URL('../../docs/operations.md', import.meta.url);

/** Labels whose values come from the rules file (rule and queue names): any value, never a fixed set. */
const CONFIGURED_LABELS = new Set(['rule', 'queue']);

// Every member of each union the metrics take. A Record over the union: adding a member to the type
// without adding it here fails the type check, so these lists cannot fall behind the code.
const RULE_OUTCOMES: Record<RuleOutcome, true> = { allowed: true, deferred: true, duplicate: true, refused: true, 'shadow-refused': true, 'fail-open': true, 'fail-closed': true };
const DECISION_OUTCOMES: Record<DecisionOutcome, true> = { allowed: true, refused: true, 'fail-open': true, 'fail-closed': true };
const SUBMIT_OUTCOMES: Record<SubmitOutcome, true> = { admitted: true, duplicate: true, queue_full: true, wait_too_long: true, quota_exhausted: true };
type FinishOutcome = Parameters<NonNullable<ThrottleObserver['onFinish']>>[0]['outcome'];
const FINISH_OUTCOMES: Record<FinishOutcome, true> = { completed: true, failed: true, retrying: true };
type DeferReason = Parameters<NonNullable<ThrottleObserver['onDefer']>>[0]['reason'];
const DEFER_REASONS: Record<DeferReason, true> = { rate: true, upstream: true };
const UPSTREAM_EVENTS: Record<UpstreamEvent, true> = { budget: true, throttled: true, ok: true, ignored: true };
const IGNORE_REASONS: Record<IgnoreReason, true> = { malformed: true, negative: true, absurd: true, inconsistent: true, in_the_past: true, capped: true };
const RELOAD_RESULTS: Record<Parameters<Metrics['recordRulesReload']>[0], true> = { applied: true, refused: true };
const WAIT_KINDS: Record<Parameters<Metrics['onWaitOpened']>[0], true> = { long_poll: true, sse: true };
const keys = <K extends string>(r: Record<K, true>) => Object.keys(r) as K[];

/** A Metrics instance that has emitted every label value it can. */
async function everySeries(): Promise<Map<string, Map<string, Set<string>>>> {
  const m = new Metrics({ defaultMetrics: true });
  for (const outcome of keys(RULE_OUTCOMES)) m.recordRule('api.ip', outcome);
  for (const algorithm of Object.keys(ALGORITHMS) as Algorithm[]) {
    for (const outcome of keys(DECISION_OUTCOMES)) m.onDecision({ algorithm, outcome, latencyMs: 1 });
    m.onDenyCacheHit({ algorithm });
  }
  m.onRedisError();
  for (const outcome of keys(SUBMIT_OUTCOMES)) m.onSubmit({ queue: 'orders', outcome });
  m.onLaneDepth({ queue: 'orders', depth: 3 });
  m.onStart({ queue: 'orders', queuedMs: 10, lateMs: 1, retry: false });
  for (const reason of keys(DEFER_REASONS)) m.onDefer({ queue: 'orders', reason });
  for (const outcome of keys(FINISH_OUTCOMES)) m.onFinish({ queue: 'orders', outcome });
  m.onRepair({ queue: 'orders', units: 1 });
  m.onWorkerError({ queue: 'orders' });
  for (const scope of ['key', 'queue'] as const) for (const period of ['day', 'month'] as const) m.onQuotaRefusal({ queue: 'orders', scope, period });
  m.watchQuotas('orders', () =>
    Promise.resolve((['day', 'month'] as const).flatMap((period) => (['calls', 'cost'] as const).map((unit) => ({ scope: 'queue' as const, period, unit, limit: 10, used: 3, resetsAtMs: 0, timeZone: 'UTC' })))),
  );
  m.watchSilentUnits('orders', () => Promise.resolve(2));
  for (const event of keys(UPSTREAM_EVENTS)) m.onUpstream({ queue: 'orders', event, ignored: keys(IGNORE_REASONS).map((reason) => ({ header: 'RateLimit', reason })) });
  for (const result of keys(RELOAD_RESULTS)) m.recordRulesReload(result);
  for (const kind of keys(WAIT_KINDS)) m.onWaitOpened(kind);
  m.onEventStreamDropped();
  // metric name -> label name -> values seen
  const out = new Map<string, Map<string, Set<string>>>();
  for (const metric of await m.registry.getMetricsAsJSON()) {
    const labels = new Map<string, Set<string>>();
    for (const v of metric.values as { labels: Record<string, string | number> }[]) {
      for (const [label, value] of Object.entries(v.labels)) {
        if (label === 'le') continue;
        if (!labels.has(label)) labels.set(label, new Set());
        labels.get(label)!.add(String(value));
      }
    }
    out.set(metric.name, labels);
  }
  return out;
}

/** The rows of the doc's metrics table: metric name -> { labels cell, whole row }. */
function tableOf(text: string): Map<string, { labels: string; row: string }> {
  const doc = `\n${text}`;
  const section = doc.slice(doc.indexOf('\n## Metrics'), doc.indexOf('\n## ', doc.indexOf('\n## Metrics') + 1));
  const rows = new Map<string, { labels: string; row: string }>();
  for (const line of section.split('\n')) {
    const m = /^\|\s*`(sluice_[a-z_*]+)`\s*\|([^|]*)\|([^|]*)\|/.exec(line);
    if (m) rows.set(m[1]!, { labels: m[3]!, row: line });
  }
  return rows;
}

/** Every way the doc's table disagrees with the series, as readable lines (empty when it agrees). */
function problemsOf(doc: string, series: Map<string, Map<string, Set<string>>>): string[] {
  const problems: string[] = [];
  const rows = tableOf(doc);
  const isProcess = (name: string) => name.startsWith('sluice_process_');
  for (const [name, labels] of series) {
    const row = rows.get(isProcess(name) ? 'sluice_process_*' : name);
    if (!row) {
      problems.push(`${name}: no row in the metrics table`);
      continue;
    }
    if (isProcess(name)) continue;
    for (const [label, values] of labels) {
      if (!row.labels.includes(`\`${label}\``)) problems.push(`${name}: label '${label}' not in its labels column`);
      if (CONFIGURED_LABELS.has(label)) continue;
      for (const value of values) if (!row.row.includes(`\`${value}\``)) problems.push(`${name}: ${label} value '${value}' not written in its row`);
    }
  }
  for (const name of rows.keys()) {
    if (name === 'sluice_process_*' ? ![...series.keys()].some(isProcess) : !series.has(name)) problems.push(`${name}: documented but not registered`);
  }
  return problems;
}

describe('docs/operations.md metrics', () => {
  it('documents every metric, each of its labels and every label value it can emit, and no other metric', async () => {
    const series = await everySeries();
    expect(series.size).toBeGreaterThan(11);
    expect(problemsOf(readFileSync(DOC, 'utf8'), series)).toEqual([]);
  });

  // The checker itself: each kind of drift is caught.
  describe('the check catches drift', () => {
    const series = new Map([['sluice_x_total', new Map([['outcome', new Set(['ok', 'bad'])], ['queue', new Set(['orders'])]])]]);
    const good = '## Metrics\n\n| `sluice_x_total` | counter | `queue`, `outcome` (`ok`, `bad`) | x |\n\n## Logs\n';

    it('accepts a matching table', () => {
      expect(problemsOf(good, series)).toEqual([]);
    });
    it('a missing label value, a missing label, a missing metric, a metric that does not exist', () => {
      expect(problemsOf(good.replace(', `bad`', ''), series)).toEqual(["sluice_x_total: outcome value 'bad' not written in its row"]);
      expect(problemsOf(good.replace('`queue`, ', ''), series)).toEqual(["sluice_x_total: label 'queue' not in its labels column"]);
      expect(problemsOf(good, new Map([...series, ['sluice_y_total', new Map()]]))).toEqual(['sluice_y_total: no row in the metrics table']);
      expect(problemsOf(good.replace('## Logs', '| `sluice_gone_total` | counter | — | x |\n\n## Logs'), series)).toEqual(['sluice_gone_total: documented but not registered']);
    });
  });
});
