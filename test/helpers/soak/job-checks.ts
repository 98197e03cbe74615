// Every admitted job against its outcome (docs/algorithms.md, "At-least-once"): none lost, each in a
// final state after the drain (but the quota scenario's jobs waiting for their window's reset), each
// run as often as its payload asks (one start per attempt it throws on, one more for a deferral), more
// only where the killed worker or a stall explains it; no duplicate, no start of a job nobody admitted.
import type { Throttle, JobStatus } from '../../../src/index.js';
import type { Findings } from './findings.js';
import type { QuotaHold } from './quota-hold.js';
import { groupBy, since, type JobEventRecord, type JobPayload, type KillRecord, type StartEvent, type SubmitRecord } from './records.js';
import { WORKLOAD } from './scenario.js';
import type { RawRedis } from './target.js';

/** What the job checks learn that the order and admission checks use too. */
export interface JobFacts {
  /** Admitted jobs of the load (duplicates left out), in submit order. */
  admitted: SubmitRecord[];
  /** Each job's handler starts, in time order. */
  startsById: Map<string, StartEvent[]>;
  /** Jobs BullMQ found stalled (their worker died holding them): run again. */
  stalled: Set<string>;
  /** Jobs the gate sent back to their lane at least once (a `deferred` event with reason `rate`). */
  handedBack: Set<string>;
  /** Jobs completed or failed. */
  finished: Set<string>;
}

export interface JobFigures {
  admitted: number;
  admittedUnits: number;
  jobsStarted: number;
  starts: number;
  finalStates: Record<string, number>;
  stalled: number;
  handedBack: number;
  waitingForQuotaReset: number;
  extraStartsAfterKill: number;
}

const READ_CHUNK = 32;

export interface JobCheckInput {
  throttle: Throttle;
  raw: RawRedis;
  submits: SubmitRecord[];
  starts: StartEvent[];
  events: JobEventRecord[];
  kill: KillRecord | undefined;
  /** Lanes held by their key quota until its reset (quota-hold.ts). */
  holds: ReadonlyMap<string, QuotaHold>;
  t0: number;
}

export async function checkJobs(input: JobCheckInput, findings: Findings): Promise<{ facts: JobFacts; figures: JobFigures }> {
  const { throttle, raw, starts, t0 } = input;
  await resolveThrownSubmits(input, findings);
  const submits = input.submits.filter((s) => s.phase !== 'capacity');
  for (const s of submits.filter((x) => x.duplicate)) findings.violation('unexpected-duplicate', 'a new idempotency id makes a new job', { seq: s.seq, key: s.key, jobId: s.jobId });
  const admitted = submits.filter((s) => s.admitted && !s.duplicate);
  const byId = new Map(admitted.map((s) => [s.jobId, s]));
  for (const s of starts.filter((x) => !byId.has(x.id))) findings.violation('start-of-unknown-job', 'only admitted jobs start', { id: s.id, lane: s.lane, t: since(t0, s.t) });

  const startsById = groupBy(starts, (s) => s.id);
  // Each process reports its own starts: a job run by two (a re-run after the kill) is put in time order.
  for (const list of startsById.values()) list.sort((a, b) => a.t - b.t);
  const stalled = await stalledJobs(raw, throttle, [...byId.keys()]);
  const handedBack = new Set(input.events.filter((e) => e.type === 'deferred' && e.reason === 'rate').map((e) => e.jobId));
  const statuses = await readStatuses(throttle, [...byId.keys()]);
  const finished = new Set<string>();
  const finalStates: Record<string, number> = {};
  let waitingForQuotaReset = 0;
  let extraStartsAfterKill = 0;
  for (const [id, s] of byId) {
    const status = statuses.get(id);
    const state = status?.state ?? 'missing';
    finalStates[state] = (finalStates[state] ?? 0) + 1;
    const jobStarts = startsById.get(id) ?? [];
    const view = { id, key: s.key, cost: s.cost, payload: s.payload, state, starts: jobStarts.map((x) => ({ t: since(t0, x.t), attempt: x.attempt, pid: x.pid })) };
    if (!status) {
      findings.violation('job-lost', 'nothing admitted is lost', view);
      continue;
    }
    if (state !== 'completed' && state !== 'failed') {
      if (state === 'queued' && (await waitsForReset(raw, throttle, input.holds, s))) waitingForQuotaReset++;
      else findings.violation('job-not-final', 'every admitted job completes or fails once the queue drained', { ...view, attemptsMade: status.attemptsMade, stalled: stalled.has(id) });
      continue;
    }
    finished.add(id);
    const expected = expectedRun(s.payload);
    const ranOnKilled = input.kill !== undefined && jobStarts.some((x) => x.pid === input.kill!.pid);
    if (state === 'failed' && !expected.fails) findings.violation('job-failed-unexpectedly', 'a job whose handler throws fewer times than its attempts completes', { ...view, failedReason: status.failedReason });
    if (state === 'completed' && expected.fails) findings.violation('job-completed-unexpectedly', 'a job whose handler throws on every attempt fails', view);
    if (jobStarts.length < expected.starts) findings.violation('job-too-few-starts', 'a job runs once per attempt its handler throws on (up to attempts), once more for a deferral', { ...view, expectedStarts: expected.starts });
    if (jobStarts.length > expected.starts) {
      if (ranOnKilled || stalled.has(id)) extraStartsAfterKill++;
      else findings.violation('job-extra-starts', 'a job runs again only after its worker died (at-least-once)', { ...view, expectedStarts: expected.starts, handedBack: handedBack.has(id) });
    }
  }
  if (waitingForQuotaReset > 0) findings.note('waiting-for-quota-reset', "documented: a key quota's retries and deferrals spend its window again; jobs admitted for it wait for the reset", undefined, waitingForQuotaReset);
  if (extraStartsAfterKill > 0) findings.note('extra-starts-after-kill', 'documented: at-least-once, a job its dead worker held runs again', undefined, extraStartsAfterKill);
  return {
    facts: { admitted, startsById, stalled, handedBack, finished },
    figures: {
      admitted: admitted.length,
      admittedUnits: admitted.reduce((n, s) => n + s.cost, 0),
      jobsStarted: [...byId.keys()].filter((id) => startsById.has(id)).length,
      starts: starts.length,
      finalStates,
      stalled: stalled.size,
      handedBack: handedBack.size,
      waitingForQuotaReset,
      extraStartsAfterKill,
    },
  };
}

/** Handler starts the payload asks for, and whether the job ends failed. */
function expectedRun(payload: JobPayload): { starts: number; fails: boolean } {
  const throws = payload.failTimes ?? 0;
  const fails = throws >= WORKLOAD.attempts;
  return { starts: (fails ? WORKLOAD.attempts : 1 + throws) + (payload.deferMs ? 1 : 0), fails };
}

/**
 * A submit that threw (a deadline on a loaded machine) may have made its job: its idempotency id says
 * which job that would be. Found, it counts as admitted; not found, it is a submit that failed cleanly.
 */
async function resolveThrownSubmits(input: JobCheckInput, findings: Findings): Promise<void> {
  for (const s of input.submits.filter((x) => x.error !== undefined)) {
    if ((await input.raw.exists(jobKey(input.throttle, s.jobId))) === 1) {
      s.admitted = true;
      findings.note('thrown-submit-admitted', 'documented: a submit that fails may still have admitted its job (a retry with its id answers duplicate)', { seq: s.seq, key: s.key, error: s.error });
    } else {
      findings.note('thrown-submit', 'a submit failed (its deadline, on a loaded machine) and made no job', { seq: s.seq, key: s.key, error: s.error });
    }
  }
}

/** Jobs whose BullMQ record counts a stall (field `stc`). */
async function stalledJobs(raw: RawRedis, throttle: Throttle, ids: string[]): Promise<Set<string>> {
  const stalled = new Set<string>();
  // A pipeline goes to one server: a sharded throttle's ids are read shard by shard.
  for (const shard of throttle.shards) {
    const shardIds = ids.filter((id) => (throttle.forJob(id) ?? throttle) === shard);
    for (let i = 0; i < shardIds.length; i += 500) {
      const chunk = shardIds.slice(i, i + 500);
      const pipe = raw.pipeline();
      for (const id of chunk) pipe.hget(shard.keys.job(id), 'stc');
      const replies = (await pipe.exec())!;
      chunk.forEach((id, k) => Number(replies[k]![1] ?? 0) > 0 && stalled.add(id));
    }
  }
  return stalled;
}

/** A job's BullMQ hash, in the shard its id names. */
function jobKey(throttle: Throttle, jobId: string): string {
  return (throttle.forJob(jobId) ?? throttle).keys.job(jobId);
}

async function readStatuses(throttle: Throttle, ids: string[]): Promise<Map<string, JobStatus | null>> {
  const statuses = new Map<string, JobStatus | null>();
  for (let i = 0; i < ids.length; i += READ_CHUNK) {
    const chunk = ids.slice(i, i + READ_CHUNK);
    // One more try for a read past its deadline (a loaded machine); a second failure ends the run.
    const replies = await Promise.all(chunk.map((id) => throttle.job(id).catch(() => throttle.job(id))));
    chunk.forEach((id, k) => statuses.set(id, replies[k]!));
  }
  return statuses;
}

/** A queued job is waiting for its quota's reset when its lane is held by the quota and it is in the lane's queue. */
async function waitsForReset(raw: RawRedis, throttle: Throttle, holds: ReadonlyMap<string, QuotaHold>, s: SubmitRecord): Promise<boolean> {
  if (!holds.has(s.lane)) return false;
  return (await raw.zscore(throttle.forLane(s.lane).keys.laneQueue(s.lane), `${s.jobId}|${s.cost}`)) !== null;
}
