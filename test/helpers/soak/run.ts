// One soak run against a Redis server: the throttle and its worker processes, the load with its chaos,
// the drain, then every check over what was recorded and what Redis holds, in the order the state
// allows (the state right after the drain, then once the outgoing sets expired, then the capacity check
// that adds jobs). Returns the figures; the findings collect the violations and notes.
import { writeFileSync } from 'node:fs';
import { createSluice, type Throttle } from '../../../src/index.js';
import { checkAdmission } from './admission-checks.js';
import { checkCapacity } from './capacity-check.js';
import { Chaos } from './chaos.js';
import { waitForDrain } from './drain.js';
import { EventTail } from './events.js';
import { checkFifo } from './fifo-check.js';
import type { Findings } from './findings.js';
import { WorkerFleet } from './fleet.js';
import { checkJobs } from './job-checks.js';
import { Submitter } from './load.js';
import { checkKeyQuota, checkPacing } from './pacing-checks.js';
import { checkQuotaHolds } from './quota-hold.js';
import { seededRandom, zipfPicker } from './random.js';
import { since, sleep, wallMs, type JobEventRecord, type Log, type RunRecord, type StartEvent } from './records.js';
import { inspectRedisState } from './redis-state.js';
import { throttleConfigOf, WORKLOAD, type SoakSettings } from './scenario.js';
import { rawClient, type RawRedis } from './target.js';

const NAME = 'soak';
/** After the load: the follow-ups due this soon still go out (a client honouring Retry-After). */
const FOLLOW_UP_GRACE_MS = 1_500;
/** Past every outgoing set's life (a second after its last start). */
const OUTGOING_LIFE_MS = 2_000;
const CLOSE_TIMEOUT_MS = 5_000;

export interface SoakRun {
  settings: SoakSettings;
  redisUrl: string;
  findings: Findings;
  log: Log;
  /** Writes the run's records (submits, starts, pauses, events) here as JSON. */
  dumpPath?: string | undefined;
}

export async function runSoak(run: SoakRun): Promise<Record<string, unknown>> {
  const { settings, redisUrl, log } = run;
  const config = throttleConfigOf(settings);
  const prefix = `soak${Date.now()}`;
  const sluice = createSluice({ redis: redisUrl, prefix });
  const throttle = sluice.throttle(NAME, config);
  const raw = rawClient(redisUrl);
  const fleet = new WorkerFleet({ redisUrl, prefix, name: NAME, config, concurrency: settings.concurrency, handlerMs: WORKLOAD.handlerMs });
  try {
    await throttle.ready();
    await fleet.start(settings.procs);
    log(`${settings.procs} worker processes ready; horizon ${throttle.timing.leadUs / 1000} ms`);
    const t0 = wallMs();
    const tail = new EventTail(redisUrl, throttle.shards.map((s) => s.keys.events));
    const { submitter, chaos } = await driveLoad(run, throttle, fleet);
    const submitsEndedAt = wallMs();
    log(`submits done: ${submitter.records.length} (at most ${submitter.maxInFlight} in flight)`);
    const drain = await waitForDrain(throttle, raw, submitsEndedAt, settings.drainTimeoutMs);
    log(`drain ${drain.drained ? 'done' : 'TIMED OUT'} after ${drain.ms} ms; ${drain.holds.size} lanes held by their quota`);
    if (!drain.drained) run.findings.violation('drain-timeout', 'the queue drains once the submits stop', { afterMs: drain.ms, counts: drain.counts, busyLanes: drain.busyLanes, dispatched: drain.dispatched });
    // Units taken for started (workers silent a second past a start: the killed one, or stalled): the throttle's count.
    const silentUnits = (await Promise.all(throttle.shards.map((sh) => raw.hget(sh.keys.global, 'sl')))).reduce((n, v) => n + Number(v ?? 0), 0);
    log(`silent units (taken for started): ${silentUnits}`);
    const record: RunRecord = { t0, submits: submitter.records, pauses: chaos.pauses, kill: chaos.kill, starts: fleet.starts(), events: await tail.stop() };
    // Written before the checks: a run whose checks fail still leaves its records to look at.
    if (run.dumpPath) writeFileSync(run.dumpPath, JSON.stringify(record));
    const figures = await checkRun(run, throttle, raw, record, drain.holds, submitter);
    return { prefix, horizonMs: throttle.timing.leadUs / 1000, marginPpm: throttle.timing.marginPpm, workers: { pids: fleet.pids, ...(chaos.kill ? { kill: { ...chaos.kill, at: since(t0, chaos.kill.at) } } : {}) }, drain: { drained: drain.drained, ms: drain.ms, heldByQuota: drain.holds.size }, silentUnits, ...figures };
  } finally {
    log('closing workers');
    await fleet.close();
    await Promise.race([throttle.close().catch(() => undefined), sleep(CLOSE_TIMEOUT_MS)]);
    await Promise.race([sluice.close().catch(() => undefined), sleep(CLOSE_TIMEOUT_MS)]);
    raw.disconnect();
  }
}

/** The load and its chaos for the run's duration, then the follow-ups due soon, then every answer. */
async function driveLoad(run: SoakRun, throttle: Throttle, fleet: WorkerFleet): Promise<{ submitter: Submitter; chaos: Chaos }> {
  const { settings, log } = run;
  const random = seededRandom(settings.seed);
  const submitter = new Submitter(throttle, { random, key: zipfPicker(settings.keys, WORKLOAD.zipfExponent, random) });
  const chaosRandom = seededRandom(settings.seed ^ 0x5eed);
  const chaos = new Chaos(throttle, fleet, chaosRandom, zipfPicker(settings.keys, WORKLOAD.zipfExponent, chaosRandom), log);
  chaos.start({ pauseEveryMs: settings.pauseEveryMs, globalPauses: settings.globalPauses, killAtMs: settings.killAtMs, durationMs: settings.durationMs });
  const progress = () => `admitted ${submitter.records.filter((s) => s.admitted).length}, starts ${fleet.startCount()}`;
  try {
    await submitter.run(settings.submitsPerSecond, settings.durationMs, log, progress);
  } finally {
    await chaos.stop();
  }
  await submitter.settle(FOLLOW_UP_GRACE_MS);
  for (const error of chaos.pauseErrors) run.findings.note('pause-call-failed', 'a pause call failed (its deadline, on a loaded machine)', error);
  for (const error of fleet.bullErrors()) run.findings.note('bull-worker-error', "a worker's BullMQ Worker gave up on a command", error);
  return { submitter, chaos };
}

async function checkRun(run: SoakRun, throttle: Throttle, raw: RawRedis, record: RunRecord, holds: Awaited<ReturnType<typeof waitForDrain>>['holds'], submitter: Submitter): Promise<Record<string, unknown>> {
  const { findings, log, settings } = run;
  const lanes = Array.from({ length: settings.keys }, (_, i) => throttle.keys.laneId(`k${i}`));
  const afterDrain = await inspectRedisState('after-drain', throttle, raw, lanes, holds, findings);
  log('checks: jobs, pacing, admission, order');
  const jobs = await checkJobs({ throttle, raw, submits: record.submits, starts: record.starts, events: record.events, kill: record.kill, holds, t0: record.t0 }, findings);
  const touchedByKill = new Set([...jobs.facts.stalled, ...record.starts.filter((s) => s.pid === record.kill?.pid).map((s) => s.id)]);
  checkQuotaHolds(holds, record.starts, touchedByKill, findings);
  const pacing = checkPacing(throttle, record.starts, record.pauses, record.t0, findings);
  const quota = await checkKeyQuota(throttle, record.starts, findings);
  const admission = checkAdmission(record.submits, jobs.facts, throttle.config.capacity, touchedByKill, record.t0, findings);
  const lateLeavesRecord = throttle.config.globalRatePerSecond !== undefined || (throttle.config.quotas?.length ?? 0) > 0;
  const fifo = checkFifo(jobs.facts, lateLeavesRecord, record.t0, findings);
  await sleep(OUTGOING_LIFE_MS);
  const afterOutgoingExpired = await inspectRedisState('after-drain+2s', throttle, raw, lanes, holds, findings);
  log('checks: capacity');
  const capacityCheck = await checkCapacity(throttle, submitter, holds, findings);
  await sleep(OUTGOING_LIFE_MS);
  const afterCapacityCheck = await inspectRedisState('after-capacity-check', throttle, raw, lanes, holds, findings);
  const followUps = record.submits.filter((s) => s.phase === 'follow-up');
  return {
    submits: {
      load: record.submits.filter((s) => s.phase === 'load').length,
      followUps: { sent: followUps.length, admitted: followUps.filter((s) => s.admitted).length },
      thrown: record.submits.filter((s) => s.error !== undefined && s.phase !== 'capacity').length,
      maxInFlight: submitter.maxInFlight,
      refused: admission.refusals,
    },
    jobs: jobs.figures,
    events: eventCounts(record.events),
    ...pacing,
    ...(quota ? { keyQuota: quota } : {}),
    lateness: lateness(record.starts),
    queueFull: admission.queueFull,
    aboveCapacity: admission.aboveCapacity,
    fifo,
    capacityCheck,
    redisState: { afterDrain, afterOutgoingExpired, afterCapacityCheck },
  };
}

/** Events by type (deferrals by reason). */
function eventCounts(events: readonly JobEventRecord[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const e of events) {
    const kind = e.reason ? `${e.type}:${e.reason}` : e.type;
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return counts;
}

/** How late handlers started after their assigned instant (ms; negative: a little early, the clocks' offset). */
function lateness(starts: readonly StartEvent[]): Record<string, number> {
  const late = starts.map((s) => s.t - s.slot).sort((a, b) => a - b);
  if (late.length === 0) return {};
  const at = (q: number) => Math.round(late[Math.min(late.length - 1, Math.floor(late.length * q))]! * 100) / 100;
  return { min: at(0), p50: at(0.5), p99: at(0.99), max: at(1) };
}
