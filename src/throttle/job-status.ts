// The public view of a throttled job, read from BullMQ's job record.
import type { Job } from 'bullmq';
import type { QuotaUse } from './quota.js';

/** Where a job is: queued (waiting for its slot), active, completed or failed. */
export type JobState = 'queued' | 'active' | 'completed' | 'failed';

export interface JobStatus {
  id: string;
  state: JobState;
  /** Predicted start (epoch ms, Redis time) given at admission. */
  startsAtMs?: number;
  /** Handler runs so far, the successful one included (deferrals by the rate gate are not counted). */
  attemptsMade: number;
  /** The handler's return value, when completed. */
  result?: unknown;
  /** The last failure's message, when failed (or retrying). */
  failedReason?: string;
  /** The last progress its handler reported (`job.progress(value)`); absent until one other than 0 (BullMQ's initial value). */
  progress?: unknown;
  submittedAtMs: number;
  startedAtMs?: number;
  finishedAtMs?: number;
  /** The tenant that submitted it (absent without authentication). */
  tenant?: string;
  /** The plan it was admitted under. */
  plan?: string;
  /** The lane it was admitted into. */
  lane?: string;
  cost?: number;
  /** A queued job's lane's spend quotas (and the queue's) in their current window: what it waits for when one is used up. */
  quotas?: QuotaUse[];
  /** The callback URL it was submitted with, and every delivery attempt so far. */
  callback?: { url: string; delivered: boolean; attempts: { atMs: number; status?: number; error?: string; durationMs: number; delivered: boolean }[] };
}

/** The data sluice stores in each BullMQ job. Short names: it is stored once per queued job. */
export interface JobData {
  /** Lane id (the key's identity segment, hashed when sensitive). */
  l: string;
  /** Cost units. */
  c: number;
  /** The caller's payload. */
  p: unknown;
  /** Predicted start, epoch ms. */
  s: number;
  /** The tenant that submitted it (absent without authentication). */
  t?: string;
  /** The plan it was admitted under (absent: the throttle's own settings). */
  pl?: string;
  /** Callback URL: its outcome is POSTed there (signed) once finished. */
  cb?: string;
  /** 1: the callback's host was listed exactly, so a private address is allowed. */
  cbp?: 1;
}

const STATES: Record<string, JobState> = {
  delayed: 'queued',
  waiting: 'queued',
  prioritized: 'queued',
  'waiting-children': 'queued',
  active: 'active',
  completed: 'completed',
  failed: 'failed',
};

export function jobStatusOf(job: Job<JobData>, bullState: string): JobStatus {
  const status: JobStatus = {
    id: job.id!,
    state: STATES[bullState] ?? 'queued',
    attemptsMade: job.attemptsMade,
    submittedAtMs: job.timestamp,
  };
  if (job.data?.s !== undefined) status.startsAtMs = job.data.s;
  if (job.data?.t !== undefined) status.tenant = job.data.t;
  if (job.data?.pl !== undefined) status.plan = job.data.pl;
  if (job.data?.l !== undefined) status.lane = job.data.l;
  if (job.data?.c !== undefined) status.cost = job.data.c;
  // processedOn is set when a worker took the job, also when the rate gate then sent it back to wait.
  if (job.processedOn && status.state !== 'queued') status.startedAtMs = job.processedOn;
  if (job.finishedOn) status.finishedAtMs = job.finishedOn;
  if (status.state === 'completed') status.result = job.returnvalue;
  if (job.failedReason) status.failedReason = job.failedReason;
  if (job.progress !== undefined && job.progress !== 0) status.progress = job.progress;
  return status;
}
