// This process's view of Redis's clock: the offset between Redis TIME and the local wall clock,
// estimated from gate round trips the way NTP does — only from samples whose round trip was short, so
// a reply that waited in a busy event loop cannot shift the estimate (and a start can be judged late
// by what really happened, not by when its reply happened to be read).

/** Local wall-clock ms with sub-ms resolution. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

export class RedisClock {
  /** Redis ms minus local wall ms. */
  private offsetMs = 0;
  private bestRttMs = Number.POSITIVE_INFINITY;
  private bestAt = 0;
  private samples = 0;

  /** How long a best sample is trusted before any newer one may replace it (clocks drift). */
  constructor(private readonly refreshMs = 10_000) {}

  /** One round trip: sent and received in local wall ms, and the Redis time (µs) read in between. */
  sample(sentMs: number, redisUs: number, receivedMs: number): void {
    const rtt = receivedMs - sentMs;
    const stale = receivedMs - this.bestAt > this.refreshMs;
    if (rtt <= this.bestRttMs || stale || this.samples === 0) {
      this.offsetMs = redisUs / 1000 - (sentMs + receivedMs) / 2;
      this.bestRttMs = rtt;
      this.bestAt = receivedMs;
    }
    this.samples++;
  }

  /** The local wall-clock ms of a Redis instant (µs). */
  toLocal(redisUs: number): number {
    return redisUs / 1000 - this.offsetMs;
  }
}

/** One per process: every gate call of every throttle refines it. */
export const redisClock = new RedisClock();
