// Jobs as operators (and their owners) act on them: the full detail, failed jobs paged, cancel of a
// queued job (one atomic script: the job and its lane units go together), and retry of a failed job
// back through its lane (its capacity and max wait hold, as for a submit).
import type { Job } from 'bullmq';
import type { RedisClient } from '../redis/connection.js';
import type { ScriptRegistry } from '../redis/scripts.js';
import type { JobData } from '../throttle/job-status.js';
import { laneMember } from '../throttle/keys.js';
import type { Throttle } from '../throttle/throttle.js';

export type CancelResult =
  | { cancelled: true; freedUnits: number; previousState: string }
  | { cancelled: false; state: 'missing' | 'active' | 'completed' | 'failed' };

export type RetryResult =
  | { retried: true; startsAtMs: number; position: number }
  | { retried: false; reason: 'queue_full' | 'wait_too_long' | 'quota_exhausted'; retryAfterMs: number; capacity: number; queued: number }
  | { retried: false; reason: 'not_failed'; state: string }
  | { retried: false; reason: 'missing' };

export interface JobDetail {
  id: string;
  state: string;
  tenant?: string;
  plan?: string;
  lane?: string;
  cost?: number;
  attemptsMade: number;
  payload?: unknown;
  result?: unknown;
  failedReason?: string;
  stacktrace?: string[];
  submittedAtMs: number;
  startsAtMs?: number;
  startedAtMs?: number;
  finishedAtMs?: number;
}

/** Cancels a queued job; `tenant` restricts it to that tenant's jobs (another's reads as missing). */
export async function cancelJob(scripts: ScriptRegistry, redis: RedisClient, sharded: Throttle, jobId: string, tenant?: string): Promise<CancelResult> {
  const throttle = sharded.forJob(jobId);
  if (!throttle) return { cancelled: false, state: 'missing' };
  const k = throttle.keys;
  const base = k.job(jobId);
  const q = base.slice(0, base.length - jobId.length);
  for (let attempt = 0; attempt < 3; attempt++) {
    const raw = await redis.hget(base, 'data');
    if (raw === null) return { cancelled: false, state: 'missing' };
    const lane = laneOf(raw);
    if (lane === undefined) return { cancelled: false, state: 'missing' };
    const keys = [k.lane(lane), k.laneQueue(lane), k.busy, k.waiting, base, `${base}:lock`];
    keys.push(`${q}delayed`, `${q}wait`, `${q}paused`, `${q}prioritized`, `${q}completed`, `${q}failed`, `${q}events`, k.ready);
    const reply = (await scripts.runPositional('admin-cancel', keys, ['', jobId, lane, tenant ?? ''])) as (string | number)[];
    if (reply[0] === 1) {
      await throttle.recordEvent('cancelled', jobId, { lane, ...ownerOf(raw) });
      return { cancelled: true, freedUnits: Number(reply[1]), previousState: String(reply[2]) };
    }
    // 'moved': the job was re-read between our read and the script (it cannot change lanes today); read again.
    if (reply[1] !== 'moved') return { cancelled: false, state: reply[1] as 'missing' | 'active' | 'completed' | 'failed' };
  }
  return { cancelled: false, state: 'missing' };
}

/** The tenant named in a job's data, for its events. */
function ownerOf(raw: string): { tenant?: string } {
  try {
    const data = JSON.parse(raw) as Partial<JobData>;
    return typeof data.t === 'string' ? { tenant: data.t } : {};
  } catch {
    return {};
  }
}

function laneOf(raw: string): string | undefined {
  try {
    const data = JSON.parse(raw) as Partial<JobData>;
    return typeof data.l === 'string' ? data.l : undefined;
  } catch {
    return undefined;
  }
}

/** Retries a failed job through its lane: admitted again (or refused like a submit), then moved back to wait. */
export async function retryJob(sharded: Throttle, jobId: string): Promise<RetryResult> {
  const throttle = sharded.forJob(jobId);
  if (!throttle) return { retried: false, reason: 'missing' };
  const queue = await throttle.bullQueue();
  const job = (await queue.getJob(jobId)) as Job<JobData> | undefined;
  if (!job) return { retried: false, reason: 'missing' };
  const state = await job.getState();
  if (state !== 'failed') return { retried: false, reason: 'not_failed', state: state === 'delayed' || state === 'waiting' ? 'queued' : state };
  const { l: lane, c: cost, pl: plan } = job.data;
  const reply = await throttle.readmit(lane, jobId, cost, plan);
  if (reply.kind === 'queue_full' || reply.kind === 'wait_too_long' || reply.kind === 'quota_exhausted') {
    return { retried: false, reason: reply.kind, retryAfterMs: Math.ceil(reply.retryUs / 1000), capacity: throttle.limitsOf(lane, plan).capacity, queued: reply.depth };
  }
  if (reply.kind !== 'admitted') return { retried: false, reason: 'not_failed', state };
  const startsAtMs = Math.ceil(reply.startUs / 1000);
  try {
    await job.updateData({ ...job.data, s: startsAtMs });
    // Before the job can start again, so the stream has it first (a retry that then fails leaves it behind).
    await throttle.recordEvent('admitted', jobId, { lane, ...(job.data.t !== undefined ? { tenant: job.data.t } : {}), startsAtMs, position: reply.position });
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
  } catch (error) {
    // Not moved back (it was retried or removed meanwhile): the lane units are not its to hold.
    await throttle.gateLanes.release(lane, [laneMember(jobId, cost)]).catch(() => undefined);
    throw error;
  }
  return { retried: true, startsAtMs, position: reply.position };
}

/** Everything stored about a job; null when unknown or past its retention. */
export async function jobDetail(sharded: Throttle, jobId: string): Promise<JobDetail | null> {
  const throttle = sharded.forJob(jobId);
  if (!throttle) return null;
  const queue = await throttle.bullQueue();
  const job = (await queue.getJob(jobId)) as Job<JobData> | undefined;
  if (!job) return null;
  return detailOf(job, await job.getState());
}

function detailOf(job: Job<JobData>, bullState: string): JobDetail {
  const state = ['delayed', 'waiting', 'prioritized', 'waiting-children', 'paused'].includes(bullState) ? 'queued' : bullState;
  const d = job.data ?? ({} as Partial<JobData>);
  const out: JobDetail = { id: job.id!, state, attemptsMade: job.attemptsMade, submittedAtMs: job.timestamp };
  if (d.t !== undefined) out.tenant = d.t;
  if (d.pl !== undefined) out.plan = d.pl;
  if (d.l !== undefined) out.lane = d.l;
  if (d.c !== undefined) out.cost = d.c;
  if (d.p !== undefined) out.payload = d.p;
  if (d.s !== undefined) out.startsAtMs = d.s;
  if (state === 'completed') out.result = job.returnvalue ?? null;
  if (job.failedReason) out.failedReason = job.failedReason;
  if (job.stacktrace?.length) out.stacktrace = job.stacktrace;
  if (job.processedOn && state !== 'queued') out.startedAtMs = job.processedOn;
  if (job.finishedOn) out.finishedAtMs = job.finishedOn;
  return out;
}

/** Failed jobs, most recent first, `limit` from `offset`; with the total failed count. */
export async function failedJobs(throttle: Throttle, limit: number, offset: number): Promise<{ total: number; jobs: JobDetail[]; next?: number }> {
  // A sharded throttle: the first offset + limit of each shard, merged most recent first.
  const perShard = await Promise.all(
    throttle.shards.map(async (t) => {
      const queue = await t.bullQueue();
      const from = throttle.shards.length > 1 ? 0 : offset;
      return Promise.all([queue.getFailedCount(), queue.getFailed(from, offset + limit - 1)]);
    }),
  );
  const total = perShard.reduce((a, [count]) => a + count, 0);
  let jobs = perShard.flatMap(([, list]) => (list as Job<JobData>[]).filter(Boolean));
  if (perShard.length > 1) jobs = jobs.sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0)).slice(offset, offset + limit);
  const details = jobs.map((j) => detailOf(j, 'failed'));
  return { total, jobs: details, ...(offset + limit < total ? { next: offset + limit } : {}) };
}
