// What a handler throws to say "not now": the job goes back to wait without using an attempt.

/**
 * Throw from a worker handler when the upstream says "later" (a 429 or 503 with Retry-After): the job
 * is moved back to delayed for `delayMs` without using an attempt, and its lane (or, with
 * `scope: 'global'`, the whole throttle) gets no new start before then.
 */
export class DeferJob extends Error {
  readonly delayMs: number;
  readonly scope: 'lane' | 'global';

  constructor(delayMs: number, options: { scope?: 'lane' | 'global'; reason?: string } = {}) {
    super(options.reason ?? `deferred for ${delayMs} ms`);
    this.name = 'DeferJob';
    this.delayMs = Math.max(0, delayMs);
    this.scope = options.scope ?? 'lane';
  }
}

/**
 * Thrown by `job.assertOnTime()`: the upstream call would leave later after its start instant than the
 * queue's send headroom allows. The job goes back to its lane, keeping its place, no attempt used.
 */
export class LateSend extends DeferJob {
  constructor(lateMs: number, headroomMs: number) {
    super(0, { reason: `the call would leave ${lateMs.toFixed(1)} ms after its start, beyond the send headroom of ${headroomMs} ms` });
    this.name = 'LateSend';
  }
}
