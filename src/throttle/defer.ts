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
