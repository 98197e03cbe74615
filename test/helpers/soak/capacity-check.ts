// Capacity after the drain: the busiest lanes (under a key quota, those whose window still has room
// for the jobs) take exactly `capacity` units again, and those jobs run. A unit that never came back (a
// leak) shows as a refusal here. A refusal for the quota is justified when the window's calls plus the
// lane's queued jobs leave no room.
import type { Throttle } from '../../../src/index.js';
import type { Findings } from './findings.js';
import type { Submitter } from './load.js';
import type { QuotaHold } from './quota-hold.js';
import { groupBy, sleep, wallMs, type SubmitRecord } from './records.js';
import { WORKLOAD } from './scenario.js';

const LANES = 20;
const FINISH_TIMEOUT_MS = 30_000;

export interface CapacityFigures {
  lanes: number;
  submits: number;
  admitted: number;
  refusedForQuota: number;
  finished: boolean;
}

/** `capacity` units as jobs of the largest cost and what remains: a lane full to the unit. */
function costsFilling(capacity: number): number[] {
  const costs: number[] = [];
  for (let left = capacity; left > 0; left -= costs.at(-1)!) costs.push(Math.min(left, WORKLOAD.maxCost));
  return costs;
}

export async function checkCapacity(throttle: Throttle, submitter: Submitter, holds: ReadonlyMap<string, QuotaHold>, findings: Findings): Promise<CapacityFigures> {
  const capacity = throttle.config.capacity;
  const candidates = [...groupBy(submitter.records.filter((s) => s.admitted), (s) => s.key)]
    .filter(([key]) => !holds.has(throttle.keys.laneId(key)))
    .sort((a, b) => b[1].length - a[1].length)
    .map(([key]) => key);
  const busiest: string[] = [];
  for (const key of candidates) {
    if (busiest.length === LANES) break;
    // Under a key quota, lanes whose window still has room for the jobs: the check is of capacity.
    if (await quotaHasRoom(throttle, key, costsFilling(capacity).length)) busiest.push(key);
  }
  const records = (await Promise.all(busiest.map((key) => fillLane(throttle, submitter, key, capacity, findings)))).flat();
  const admitted = records.filter((r) => r.admitted);
  const finished = await allFinished(throttle, admitted.map((r) => r.jobId));
  if (!finished) findings.violation('capacity-jobs-not-finished', 'jobs admitted into idle lanes run', { jobs: admitted.length, withinMs: FINISH_TIMEOUT_MS });
  return { lanes: busiest.length, submits: records.length, admitted: admitted.length, refusedForQuota: records.filter((r) => r.reason === 'quota_exhausted').length, finished };
}

/** One lane: its public view first (empty), then its capacity in jobs, one after another. */
async function fillLane(throttle: Throttle, submitter: Submitter, key: string, capacity: number, findings: Findings): Promise<SubmitRecord[]> {
  const before = await throttle.lane(key);
  if (before.depth !== 0 || before.jobs !== 0) findings.violation('lane-info-not-empty', "lane() shows no queued work once the lane's jobs started", { key, depth: before.depth, jobs: before.jobs });
  const records: SubmitRecord[] = [];
  for (const cost of costsFilling(capacity)) {
    const r = await submitter.submit(key, cost, { n: 0 }, 'capacity');
    records.push(r);
    if (r.admitted) continue;
    if (r.reason === 'quota_exhausted' && (await quotaSpokenFor(throttle, key))) {
      findings.note('capacity-check-refused-for-quota', "documented: a key quota refuses once its window's calls and the lane's queued jobs fill it", { key });
    } else {
      findings.violation('capacity-not-free', 'an idle lane admits its capacity (no unit leaked)', { key, cost, reason: r.reason, queued: r.queued, retryAfterMs: r.retryAfterMs, error: r.error });
    }
  }
  return records;
}

/** The key quota's window has room for `calls` more (true without a key quota). */
async function quotaHasRoom(throttle: Throttle, key: string, calls: number): Promise<boolean> {
  const [use] = (await throttle.quotaUse(throttle.keys.laneId(key))).filter((q) => q.scope === 'key');
  return !use || use.used + calls <= use.limit;
}

/** The key quota's window has no room for one more call: its calls plus the lane's queued jobs reach its limit. */
async function quotaSpokenFor(throttle: Throttle, key: string): Promise<boolean> {
  const [use] = (await throttle.quotaUse(throttle.keys.laneId(key))).filter((q) => q.scope === 'key');
  if (!use) return false;
  const { jobs } = await throttle.lane(key);
  return use.used + jobs + 1 > use.limit;
}

async function allFinished(throttle: Throttle, ids: string[]): Promise<boolean> {
  const deadline = wallMs() + FINISH_TIMEOUT_MS;
  while (wallMs() < deadline) {
    const statuses = await Promise.all(ids.map((id) => throttle.job(id)));
    if (statuses.every((s) => s?.state === 'completed' || s?.state === 'failed')) return true;
    await sleep(300);
  }
  return false;
}
