// This process's view of Redis's clock: the offset between Redis TIME and the local wall clock,
// learnt from gate round trips. Each reply bounds the offset from below — Redis read its clock
// before the reply was read here, so offset >= redis time - receive time — and the largest bound seen
// recently is used. That estimate is never ahead of the truth: a job may start a fraction of a
// millisecond late, never early, and a reply that waited in a busy event loop cannot move it.

/** Local wall-clock ms with sub-ms resolution. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

export class RedisClock {
  /** Largest bound of the current and the previous period (clocks drift: old bounds age out). */
  private current = Number.NEGATIVE_INFINITY;
  private previous = Number.NEGATIVE_INFINITY;
  private periodStart = 0;

  constructor(private readonly periodMs = 10_000) {}

  /** One reply: the Redis time (µs) it carried and when it was read here (local wall ms). */
  sample(redisUs: number, receivedMs: number): void {
    if (receivedMs - this.periodStart > this.periodMs) {
      this.previous = this.current;
      this.current = Number.NEGATIVE_INFINITY;
      this.periodStart = receivedMs;
    }
    this.current = Math.max(this.current, redisUs / 1000 - receivedMs);
  }

  /** Redis ms minus local wall ms (a lower bound, as tight as the best recent reply). */
  get offsetMs(): number {
    return Math.max(this.current, this.previous);
  }

  /** The local wall-clock ms of a Redis instant (µs): never earlier than the real one. */
  toLocal(redisUs: number): number {
    return redisUs / 1000 - this.offsetMs;
  }
}

/** One per process: every gate call of every throttle refines it. */
export const redisClock = new RedisClock();
