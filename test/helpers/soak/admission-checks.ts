// Admission against capacity (docs/algorithms.md, "Admission"): a unit of a lane's capacity is held
// from a job's admission until its worker says it started, so a queue_full refusal is justified only
// when the lane held `capacity` units, and a lane never holds more than `capacity` (a violation), but
// for the documented exception: a worker silent a second past its job's start (the killed one) has its
// unit taken for started, and its job, run again, holds one more (a note).
import type { Findings } from './findings.js';
import type { JobFacts } from './job-checks.js';
import { groupBy, since, type SubmitRecord } from './records.js';

/** The recorded instants are taken around the scripts' clock: this much slack on either side. */
const CLOCK_SLACK_MS = 2;
/** A worker's word that its job started reaches Redis after the handler's start: this long at most here (a loaded machine). */
const SAID_SLACK_MS = 100;

export interface AdmissionFigures {
  refusals: Record<string, number>;
  queueFull: { refused: number; withRoomByOwnCount: number; withRoomByJobs: number };
  /** Lanes found above their capacity (lower bound), and by how many units at most. */
  aboveCapacity: { lanes: number; maxUnitsOver: number };
}

export function checkAdmission(submits: readonly SubmitRecord[], facts: JobFacts, capacity: number, touchedByKill: ReadonlySet<string>, t0: number, findings: Findings): AdmissionFigures {
  const refused = submits.filter((s) => s.admitted === false && s.phase !== 'capacity');
  const refusals: Record<string, number> = {};
  for (const r of refused) refusals[r.reason!] = (refusals[r.reason!] ?? 0) + 1;
  return { refusals, queueFull: checkRefusals(refused, facts, capacity, t0, findings), aboveCapacity: aboveCapacity(facts, capacity, touchedByKill, t0, findings) };
}

/**
 * Until when a job may hold its unit: its worker's word on its last start (sent as the handler starts,
 * arriving within SAID_SLACK_MS), or Infinity when it has not finished (it may be queued again: a retry,
 * a deferral).
 */
function heldUntil(jobId: string, facts: JobFacts): number {
  const starts = facts.startsById.get(jobId);
  if (!starts?.length || !facts.finished.has(jobId)) return Infinity;
  return Math.max(...starts.map((s) => Math.max(s.slot, s.t))) + SAID_SLACK_MS;
}

/**
 * Each queue_full refusal twice: by its own count (the units the reply says the lane held, plus the
 * job's cost, must exceed the capacity), and by the jobs (an upper bound of what the lane could hold
 * while the refusal ran: every job of the lane admitted before its answer and not started for the last
 * time before it was sent). A refusal the upper bound leaves room for refused a job it had room for.
 */
function checkRefusals(refused: readonly SubmitRecord[], facts: JobFacts, capacity: number, t0: number, findings: Findings): AdmissionFigures['queueFull'] {
  const admittedByLane = groupBy(facts.admitted, (s) => s.lane);
  const figures = { refused: 0, withRoomByOwnCount: 0, withRoomByJobs: 0 };
  for (const r of refused.filter((x) => x.reason === 'queue_full')) {
    figures.refused++;
    if (r.queued! + r.cost <= capacity) {
      figures.withRoomByOwnCount++;
      findings.violation('refusal-with-room(its own count)', 'queue_full only when the lane holds more than capacity - cost units', { seq: r.seq, key: r.key, cost: r.cost, queued: r.queued, capacity });
    }
    const holders = (admittedByLane.get(r.lane) ?? []).filter((j) => j.sentAt < r.answeredAt! && heldUntil(j.jobId, facts) > r.sentAt - CLOCK_SLACK_MS);
    const upper = holders.reduce((n, j) => n + j.cost, 0);
    if (upper + r.cost <= capacity) {
      figures.withRoomByJobs++;
      findings.violation('refusal-with-room(by the jobs)', 'queue_full only when the lane holds more than capacity - cost units', {
        seq: r.seq,
        key: r.key,
        cost: r.cost,
        reportedQueued: r.queued,
        upperBoundHeld: upper,
        capacity,
        sent: since(t0, r.sentAt),
        answered: since(t0, r.answeredAt!),
        holders: holders.map((j) => ({ id: j.jobId, cost: j.cost, sent: since(t0, j.sentAt), heldUntil: since(t0, heldUntil(j.jobId, facts)) })),
      });
    }
  }
  return figures;
}

/**
 * A lower bound of the units each lane held over time: a job surely holds its units from its admission's
 * answer to its first start (its assigned instant, less the clock slack). Above the capacity is a
 * violation, but where a job the killed worker held is among the holders: a second past its start its
 * unit was taken for started (its worker silent), and the job, run again later, holds one more until
 * then (a note). One finding per lane, at its worst moment.
 */
function aboveCapacity(facts: JobFacts, capacity: number, touchedByKill: ReadonlySet<string>, t0: number, findings: Findings): AdmissionFigures['aboveCapacity'] {
  const figures = { lanes: 0, maxUnitsOver: 0 };
  for (const [lane, jobs] of groupBy(facts.admitted, (s) => s.lane)) {
    const changes: { at: number; units: number; job: SubmitRecord; firstStart: number }[] = [];
    for (const job of jobs) {
      const starts = facts.startsById.get(job.jobId);
      if (!starts?.length) continue;
      const firstStart = Math.min(...starts.map((s) => s.slot));
      if (firstStart - CLOCK_SLACK_MS <= job.answeredAt!) continue;
      changes.push({ at: job.answeredAt!, units: job.cost, job, firstStart }, { at: firstStart - CLOCK_SLACK_MS, units: -job.cost, job, firstStart });
    }
    // Releases before holds at one instant: the bound stays a lower bound.
    changes.sort((a, b) => a.at - b.at || a.units - b.units);
    let held = 0;
    // The worst moment with a kill-touched holder (explained), and without one (a violation).
    const worst = { explained: 0, unexplained: 0 };
    const examples: { explained?: object; unexplained?: object } = {};
    const holding = new Map<SubmitRecord, number>();
    for (const c of changes) {
      held += c.units;
      if (c.units > 0) holding.set(c.job, c.firstStart);
      else holding.delete(c.job);
      if (held <= capacity) continue;
      const kind = [...holding.keys()].some((j) => touchedByKill.has(j.jobId)) ? 'explained' : 'unexplained';
      if (held - capacity <= worst[kind]) continue;
      worst[kind] = held - capacity;
      examples[kind] = { lane, at: since(t0, c.at), units: held, capacity, jobs: [...holding].map(([j, first]) => ({ id: j.jobId, cost: j.cost, answered: since(t0, j.answeredAt!), firstStart: since(t0, first), handedBack: facts.handedBack.has(j.jobId), killed: touchedByKill.has(j.jobId) })) };
    }
    if (worst.explained + worst.unexplained > 0) {
      figures.lanes++;
      figures.maxUnitsOver = Math.max(figures.maxUnitsOver, worst.explained, worst.unexplained);
    }
    if (examples.explained) findings.note('lane-above-capacity-after-kill(lower bound)', "documented: a worker silent a second past its job's start has its unit taken for started; the job, run again, holds one more", examples.explained);
    if (examples.unexplained) findings.violation('lane-above-capacity(lower bound)', 'a lane never holds more than its capacity: a unit is held until its worker says the job started', examples.unexplained);
  }
  return figures;
}
