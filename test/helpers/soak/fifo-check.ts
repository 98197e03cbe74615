// Order within a lane (docs/algorithms.md, "Within a lane", "The worker's start"): jobs start in their
// lane's admission order, with one exception: a job that reached its start too late, after later jobs
// of its lane were handed out, starts behind them. Under a global cap or a quota it goes back to its
// lane, which the event stream records (`deferred`, reason `rate`); without either, when a later job
// already had its answer, it takes the lane's next instant behind them in the gate call itself, which
// records nothing. An inversion is held to the documented exception where the record can show it.
import type { Findings } from './findings.js';
import type { JobFacts } from './job-checks.js';
import { groupBy, since, type SubmitRecord } from './records.js';

export interface FifoFigures {
  /** Pairs of jobs of a lane started against their admission order (each later job counted once). */
  inversions: number;
  /** The earlier job was sent back to its lane (recorded). */
  afterHandBack: number;
  /** No hand-back recorded, without a cap or quota: the late start behind the lane's hand-outs, which leaves no record. */
  lateBehindUnrecorded: number;
}

/**
 * Jobs whose order is the lane's: admitted by the load, started, and never run or queued again for
 * another reason (a retry, a deferral, a re-run after the kill).
 */
function inOrder(job: SubmitRecord, facts: JobFacts): boolean {
  return !job.payload.failTimes && !job.payload.deferMs && !facts.stalled.has(job.jobId) && facts.startsById.has(job.jobId);
}

/** `lateLeavesRecord`: the throttle has a global cap or a quota, so every late start behind its lane's hand-outs is a recorded hand-back. */
export function checkFifo(facts: JobFacts, lateLeavesRecord: boolean, t0: number, findings: Findings): FifoFigures {
  const figures: FifoFigures = { inversions: 0, afterHandBack: 0, lateBehindUnrecorded: 0 };
  for (const [lane, jobs] of groupBy(facts.admitted, (s) => s.lane)) {
    // Each key's submits go one after another (load.ts): send order is admission order.
    const ordered = jobs.filter((j) => inOrder(j, facts)).sort((a, b) => a.sentAt - b.sentAt);
    let latest: { job: SubmitRecord; slot: number } | undefined;
    for (const job of ordered) {
      const slot = facts.startsById.get(job.jobId)![0]!.slot;
      if (latest && slot < latest.slot) {
        figures.inversions++;
        const example = { lane, earlier: { id: latest.job.jobId, slot: since(t0, latest.slot) }, later: { id: job.jobId, slot: since(t0, slot) } };
        if (facts.handedBack.has(latest.job.jobId)) {
          figures.afterHandBack++;
          findings.note('fifo-after-hand-back', 'documented: a job sent back after later jobs of its lane were handed out starts behind them', example);
        } else if (!lateLeavesRecord) {
          figures.lateBehindUnrecorded++;
          findings.note('fifo-late-behind(unrecorded)', 'documented: without a cap or quota a late job whose successors have their answer takes the next instant behind them, leaving no event (not told apart from a real inversion by this record)', example);
        } else {
          findings.violation('fifo-inversion', "a lane's jobs start in admission order, but a job sent back after later ones were handed out", example);
        }
      }
      if (!latest || slot > latest.slot) latest = { job, slot };
    }
  }
  return figures;
}
