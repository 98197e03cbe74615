// Simulated paid upstreams: real HTTP servers on 127.0.0.1, each with a hidden limiter it enforces
// and reports the way its real counterpart does. Every answer is recorded (time, status), so a test
// counts 429s exactly and measures how much of the hidden capacity was used.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One call the upstream answered. */
export interface SimCall {
  /** Local ms (Date.now()) when the request arrived. */
  at: number;
  status: number;
}

export abstract class SimUpstream {
  readonly calls: SimCall[] = [];
  private server: Server | undefined;
  url = '';

  /** The calls it can take per second in the long run (its hidden capacity). */
  abstract readonly capacityPerSecond: number;

  /**
   * Decides one call at `now` (local ms): the status and the headers to send, and the JSON body (by
   * default `{ ok }`). The status is what is recorded; `wireStatus` is sent instead when given.
   */
  protected abstract answer(now: number): { status: number; headers: Record<string, string>; body?: unknown; wireStatus?: number };

  /** Sees the request body before `answer` (most upstreams ignore it). */
  protected read(_text: string): void {}

  async start(): Promise<this> {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const now = Date.now();
        this.read(Buffer.concat(chunks).toString('utf8'));
        const { status, headers, body, wireStatus } = this.answer(now);
        this.calls.push({ at: now, status });
        res.writeHead(wireStatus ?? status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body ?? { ok: status < 400 }));
      });
    });
    this.server.keepAliveTimeout = 1;
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** 429s answered at or after `from` (local ms). */
  refusedSince(from: number): number {
    return this.calls.filter((c) => c.at >= from && c.status === 429).length;
  }

  /** 429s answered in [from, to). */
  refusedBetween(from: number, to: number): number {
    return this.calls.filter((c) => c.at >= from && c.at < to && c.status === 429).length;
  }

  /** Calls answered 2xx in [from, to). */
  acceptedBetween(from: number, to: number): number {
    return this.calls.filter((c) => c.at >= from && c.at < to && c.status < 300).length;
  }
}

/**
 * GitHub-like: a fixed window of `limit` calls per `windowMs` (GitHub's hour, scaled), windows aligned
 * to the server's start; every answer carries X-RateLimit-Limit / -Remaining / -Reset (epoch seconds
 * with a fraction, since the windows are short); over the limit: 429 with Remaining 0.
 */
export class FixedWindowUpstream extends SimUpstream {
  private readonly origin = Date.now();
  private window = -1;
  private used = 0;

  constructor(
    public limit: number,
    readonly windowMs: number,
  ) {
    super();
  }

  /** The hidden limit changes (another client starts sharing the account), from the next call on. */
  setLimit(limit: number): void {
    this.limit = limit;
  }

  get capacityPerSecond(): number {
    return (this.limit * 1000) / this.windowMs;
  }

  protected answer(now: number): { status: number; headers: Record<string, string> } {
    const w = Math.floor((now - this.origin) / this.windowMs);
    if (w !== this.window) [this.window, this.used] = [w, 0];
    const allowed = this.used < this.limit;
    if (allowed) this.used++;
    const resetAt = this.origin + (w + 1) * this.windowMs;
    return {
      status: allowed ? 200 : 429,
      headers: { 'x-ratelimit-limit': String(this.limit), 'x-ratelimit-remaining': String(this.limit - this.used), 'x-ratelimit-reset': (resetAt / 1000).toFixed(3) },
    };
  }
}

/**
 * Says nothing until refused: a strict sliding window of `limit` calls per `windowMs`; over it, 429
 * with `Retry-After: <whole seconds>` (at least 1) and no other header. Refused calls do not count.
 */
export class RetryAfterOnlyUpstream extends SimUpstream {
  private readonly accepted: number[] = [];

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {
    super();
  }

  get capacityPerSecond(): number {
    return (this.limit * 1000) / this.windowMs;
  }

  protected answer(now: number): { status: number; headers: Record<string, string> } {
    while (this.accepted.length && this.accepted[0]! <= now - this.windowMs) this.accepted.shift();
    if (this.accepted.length < this.limit) {
      this.accepted.push(now);
      return { status: 200, headers: {} };
    }
    const wait = (this.accepted[0] ?? now) + this.windowMs - now;
    return { status: 429, headers: { 'retry-after': String(Math.max(1, Math.ceil(wait / 1000))) } };
  }
}

/**
 * Shopify-like: a leaky bucket of `size` points leaking `leakPerSecond`, each call 1 point; every
 * answer reports `X-Shopify-Shop-Api-Call-Limit: <level>/<size>` (level rounded up, after the call);
 * a call that does not fit gets 429 with `Retry-After: 1.0`, as Shopify answers.
 */
export class LeakyBucketUpstream extends SimUpstream {
  private level = 0;
  private last = Date.now();
  /** Local ms of the answers that reported a full bucket (the next call would be refused). */
  readonly fullAt: number[] = [];

  constructor(
    readonly size: number,
    readonly leakPerSecond: number,
  ) {
    super();
  }

  get capacityPerSecond(): number {
    return this.leakPerSecond;
  }

  protected answer(now: number): { status: number; headers: Record<string, string> } {
    this.level = Math.max(0, this.level - ((now - this.last) / 1000) * this.leakPerSecond);
    this.last = now;
    const fits = this.level + 1 <= this.size;
    if (fits) this.level += 1;
    const shown = `${Math.min(this.size, Math.ceil(this.level))}/${this.size}`;
    if (Math.ceil(this.level) >= this.size) this.fullAt.push(now);
    return fits
      ? { status: 200, headers: { 'x-shopify-shop-api-call-limit': shown } }
      : { status: 429, headers: { 'x-shopify-shop-api-call-limit': shown, 'retry-after': '1.0' } };
  }
}

/**
 * Shopify-GraphQL-like: a bucket of `size` cost points restoring `restorePerSecond`; each call asks for
 * `requested` points and costs `actual` (from the JSON request body; default 1 and 1). Every answer is
 * 200 with `extensions.cost` (requested, actual, throttle status after the call); a call whose requested
 * cost is not available is refused as Shopify refuses it: 200 with an error coded THROTTLED, no cost
 * taken. Recorded as status 429 when refused, for counting.
 */
export class GraphqlCostUpstream extends SimUpstream {
  private level: number;
  private last = Date.now();
  /** The next call's request body, read by `answer` (one call at a time on loopback). */
  private body: { requested?: number; actual?: number } = {};

  /** @param initialLevel points available at the start (default: a full bucket; less: another client used some). */
  constructor(
    readonly size: number,
    readonly restorePerSecond: number,
    initialLevel = size,
  ) {
    super();
    this.level = initialLevel;
  }

  get capacityPerSecond(): number {
    return this.restorePerSecond;
  }

  protected override read(text: string): void {
    try {
      this.body = JSON.parse(text) as { requested?: number; actual?: number };
    } catch {
      this.body = {};
    }
  }

  protected answer(now: number): { status: number; headers: Record<string, string>; body: unknown; wireStatus?: number } {
    this.level = Math.min(this.size, this.level + ((now - this.last) / 1000) * this.restorePerSecond);
    this.last = now;
    const requested = this.body.requested ?? 1;
    const actual = this.body.actual ?? 1;
    const status = (level: number) => ({ maximumAvailable: this.size, currentlyAvailable: Math.floor(level), restoreRate: this.restorePerSecond });
    if (this.level < requested) {
      return {
        status: 429,
        wireStatus: 200,
        headers: {},
        body: { errors: [{ message: 'Throttled', extensions: { code: 'THROTTLED' } }], extensions: { cost: { requestedQueryCost: requested, actualQueryCost: null, throttleStatus: status(this.level) } } },
      };
    }
    this.level -= actual;
    return { status: 200, headers: {}, body: { data: { ok: true }, extensions: { cost: { requestedQueryCost: requested, actualQueryCost: actual, throttleStatus: status(this.level) } } } };
  }
}

/**
 * LLM-like: a tokens-per-window limit (OpenAI's tokens per minute, scaled) as a bucket of `tokens`
 * refilling over `windowMs`; each call uses the `tokens` of its JSON request body (default 100) and
 * answers `usage.total_tokens` with it, and OpenAI's headers: x-ratelimit-{limit,remaining,reset}-tokens
 * (the reset a Go duration: until the bucket is full) and -requests (never the limit here). A call that
 * does not fit: 429 with the same headers and no tokens taken.
 */
export class TokensPerWindowUpstream extends SimUpstream {
  private level: number;
  private last = Date.now();
  private want = 100;

  constructor(
    readonly tokens: number,
    readonly windowMs: number,
  ) {
    super();
    this.level = tokens;
  }

  /** In calls of the default size. */
  get capacityPerSecond(): number {
    return (this.tokens * 1000) / this.windowMs / 100;
  }

  /** Tokens it can take per second in the long run. */
  get tokensPerSecond(): number {
    return (this.tokens * 1000) / this.windowMs;
  }

  protected override read(text: string): void {
    try {
      this.want = (JSON.parse(text) as { tokens?: number }).tokens ?? 100;
    } catch {
      this.want = 100;
    }
  }

  protected answer(now: number): { status: number; headers: Record<string, string>; body: unknown } {
    this.level = Math.min(this.tokens, this.level + ((now - this.last) / this.windowMs) * this.tokens);
    this.last = now;
    const fits = this.level >= this.want;
    if (fits) this.level -= this.want;
    const resetMs = Math.ceil(((this.tokens - this.level) / this.tokens) * this.windowMs);
    const headers = {
      'x-ratelimit-limit-tokens': String(this.tokens),
      'x-ratelimit-remaining-tokens': String(Math.floor(this.level)),
      'x-ratelimit-reset-tokens': `${resetMs}ms`,
      'x-ratelimit-limit-requests': '100000',
      'x-ratelimit-remaining-requests': '99999',
      'x-ratelimit-reset-requests': '1ms',
    };
    return fits
      ? { status: 200, headers, body: { id: 'cmpl', usage: { prompt_tokens: this.want, completion_tokens: 0, total_tokens: this.want } } }
      : { status: 429, headers: { ...headers, 'retry-after': '1' }, body: { error: { type: 'tokens', message: 'Rate limit reached for tokens' } } };
  }
}
