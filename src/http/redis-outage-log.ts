// RedisOutageLog: a Redis outage seen by the HTTP service, logged as its two transitions (`redis_down`
// at the first request it failed, `redis_up` at the first request Redis answered again, with the count
// and the duration) instead of one error line with a stack per 503 — per-request detail is at debug.
import type { Response } from 'express';
import type { Logger } from 'pino';
import type { SluiceError } from '../errors.js';

export class RedisOutageLog {
  private downSinceMs: number | undefined;
  private failedRequests = 0;

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether a request has failed for Redis since Redis last answered one. */
  get down(): boolean {
    return this.downSinceMs !== undefined;
  }

  /** A request answered 503 because Redis did not answer: the first one since Redis was up logs `redis_down`. */
  failed(error: SluiceError, route: string): void {
    if (this.downSinceMs === undefined) {
      this.downSinceMs = this.now();
      this.failedRequests = 0;
      // One stack per outage is useful (it says which call failed first); one per request is a flood.
      this.logger.error({ event: 'redis_down', code: error.code, route, err: error.cause ?? error }, 'Redis unavailable: requests that need it answer 503 until it answers again');
    }
    this.failedRequests++;
    this.logger.debug({ event: 'redis_request_failed', code: error.code, route, reason: error.message }, 'request failed: Redis unavailable');
  }

  /** A request that needed Redis got its answer: the first one after an outage logs `redis_up`. */
  answered(): void {
    if (this.downSinceMs === undefined) return;
    const downMs = this.now() - this.downSinceMs;
    this.logger.info({ event: 'redis_up', failedRequests: this.failedRequests, downMs }, 'Redis answers again');
    this.downSinceMs = undefined;
    this.failedRequests = 0;
  }
}

/** Marks the response as answered with Redis's help (the app then tells its RedisOutageLog). */
export function markRedisAnswered(res: Response): void {
  res.locals.redisAnswered = true;
}
