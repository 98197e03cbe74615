// This process's view of Redis's clock: the offset between Redis TIME and the local wall clock,
// learnt from gate round trips. Redis reads its clock after the request was sent, so each round trip
// bounds the offset from above: offset <= redis time - send time. The smallest bound seen recently is
// used. A request goes out when it is made (the write is synchronous), so some recent one nearly always
// reached Redis within a fraction of a millisecond: the estimate is that close to the truth even while
// replies wait in a busy event loop — and so a start whose reply was read late is seen to be late.

/** Local wall-clock ms with sub-ms resolution. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

export class RedisClock {
  /** Smallest bound of the current and the previous period (clocks drift: old bounds age out). */
  private current = Number.POSITIVE_INFINITY;
  private previous = Number.POSITIVE_INFINITY;
  private periodStart = 0;

  constructor(private readonly periodMs = 10_000) {}

  /** One round trip: when the request was sent (local wall ms) and the Redis time (µs) it carried back. */
  sample(sentMs: number, redisUs: number): void {
    if (sentMs - this.periodStart > this.periodMs) {
      this.previous = this.current;
      this.current = Number.POSITIVE_INFINITY;
      this.periodStart = sentMs;
    }
    this.current = Math.min(this.current, redisUs / 1000 - sentMs);
  }

  /** Redis ms minus local wall ms (an upper bound, ahead of the truth by the best request's latency). */
  get offsetMs(): number {
    return Math.min(this.current, this.previous);
  }

  /** Redis's clock now (µs) as this process knows it: the local one until a round trip taught the offset. */
  nowUs(): number {
    const offsetMs = Number.isFinite(this.offsetMs) ? this.offsetMs : 0;
    return Math.round((wallMs() + offsetMs) * 1000);
  }

  /** The local wall-clock ms of a Redis instant (µs), at most a request's latency early. */
  toLocal(redisUs: number): number {
    return redisUs / 1000 - this.offsetMs;
  }
}

/** One per process: every gate call of every throttle refines it. */
export const redisClock = new RedisClock();
