// The shipped handler for the paid third-party API case: forward a job's payload to an upstream.
// The upstream's status and body become the job's result. Every answer's rate-limit headers (IETF
// RateLimit, X-RateLimit-*, Retry-After, Shopify's call limit, OpenAI-style budgets) and a GraphQL cost
// extension in its body are reported to the throttle, which learns the upstream's real limit from them
// (the queue's `upstream.learn`) and reconciles the job's cost with the actual one. A 429
// or 503 with Retry-After (or a 429 whose budget is used up, until its reset) puts the job back and
// holds its lane for that long, without using an attempt; other 5xx answers, timeouts and network
// errors throw, so the job is retried with the queue's backoff.
import { DeferJob, parseGraphqlCost, parseOpenAiTokens, parseUpstreamHeaders, usageTokens, type IgnoredHeader, type JobHandler, type UpstreamSignal } from '../../src/index.js';

/** An upstream as the rules file describes it (header values come from the environment). */
export interface HttpUpstream {
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  timeoutMs: number;
  headers: Readonly<Record<string, { readonly env: string } | { readonly value: string }>>;
  /** Where the actual cost is in an answer (the queue counts points or tokens); absent: calls, no cost read. */
  costFrom?: 'graphql' | 'openai_usage';
}

/** What a job of an http queue completes with. */
export interface HttpResult {
  status: number;
  /** JSON when the upstream said so, text otherwise (at most 64 KiB). */
  body: unknown;
  contentType: string | null;
}

/** Thrown for an upstream answer or failure worth retrying (5xx, timeout, network). */
export class UpstreamError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
    this.name = 'UpstreamError';
  }
}

const MAX_BODY_CHARS = 64 * 1024;

export function httpHandler(upstream: HttpUpstream, env: NodeJS.ProcessEnv = process.env): JobHandler<unknown, HttpResult> {
  // Secrets are read once, at start: a missing variable is a configuration error, not a job failure.
  const headers: Record<string, string> = {};
  for (const [name, source] of Object.entries(upstream.headers)) {
    if ('env' in source) {
      const value = env[source.env];
      if (value === undefined) throw new Error(`http handler for ${upstream.url}: environment variable ${source.env} (header ${name}) is not set`);
      headers[name] = value;
    } else {
      headers[name] = source.value;
    }
  }
  const sendsBody = upstream.method !== 'GET' && upstream.method !== 'DELETE';
  if (sendsBody && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['Content-Type'] = 'application/json';

  return async (job) => {
    let response: Response;
    const init: RequestInit = {
      method: upstream.method,
      headers: { ...headers, 'Idempotency-Key': job.id },
      ...(sendsBody ? { body: JSON.stringify(job.data) } : {}),
      signal: AbortSignal.timeout(upstream.timeoutMs),
    };
    // What is held to the rate is the instant the call leaves: everything is ready before the check.
    job.assertOnTime();
    try {
      response = await fetch(upstream.url, init);
    } catch (error) {
      const e = error as Error;
      throw new UpstreamError(e.name === 'TimeoutError' ? `upstream timed out after ${upstream.timeoutMs} ms` : `upstream unreachable: ${e.message}`);
    }
    const status = response.status;
    const { signal, ignored } = parseUpstreamHeaders(response.headers);
    const refused = status === 429 || status === 503;
    // Retry-After means "later" only on a refusal (429, 503); on any other answer it is not a limit.
    if (!refused) delete signal.retryAfterMs;
    if (refused || status >= 500) {
      await response.body?.cancel();
      // Learning is shared through Redis: the next starts of every worker process follow it. A report
      // that cannot be recorded does not fail the job (the call was made).
      await job.upstream({ ...signal, throttled: status === 429, ignored });
      if (status >= 500 && !refused) throw new UpstreamError(`upstream answered ${status}`, status);
      // Retry-After given: the upstream named the time, so wait exactly that, without using an attempt.
      // A 429 with a used-up budget and no Retry-After names it too: the budget's reset.
      const wait = signal.retryAfterMs ?? (status === 429 && signal.remaining === 0 ? signal.resetMs : undefined);
      if (wait !== undefined) throw new DeferJob(wait, { reason: `upstream answered ${status}, retry after ${wait} ms` });
      throw new UpstreamError(`upstream answered ${status} without Retry-After`, status);
    }
    const contentType = response.headers.get('content-type');
    const text = (await response.text()).slice(0, MAX_BODY_CHARS);
    let body: unknown = text;
    if (contentType?.includes('json')) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    // A query refused for its cost (GraphQL, 200 with THROTTLED) waits until the points are back,
    // whatever the queue counts. Its cost and budget are read only where the queue counts them.
    const graphql = parseGraphqlCost(body);
    const costed = costOf(upstream.costFrom, body, response.headers, graphql);
    await job.upstream({ ...signal, ...costed.signal, throttled: graphql?.throttled ?? false, ignored: [...ignored, ...costed.ignored] });
    if (graphql?.throttled) throw new DeferJob(graphql.waitMs ?? 1_000, { reason: `upstream refused the query for its cost, retry after ${graphql.waitMs} ms` });
    return { status, body, contentType };
  };
}

/**
 * The actual cost and the budget in the queue's cost units, for a queue that counts points (`graphql`:
 * the cost extension's actual cost and bucket) or tokens (`openai_usage`: `usage.total_tokens` and the
 * tokens budget headers); nothing for a queue that counts calls.
 */
function costOf(
  costFrom: HttpUpstream['costFrom'],
  body: unknown,
  headers: Headers,
  graphql: ReturnType<typeof parseGraphqlCost>,
): { signal: UpstreamSignal; ignored: IgnoredHeader[] } {
  if (costFrom === 'graphql') return { signal: graphql?.signal ?? {}, ignored: graphql?.ignored ?? [] };
  if (costFrom !== 'openai_usage') return { signal: {}, ignored: [] };
  const ignored: IgnoredHeader[] = [];
  const tokens = parseOpenAiTokens(headers, ignored) ?? {};
  const cost = usageTokens(body);
  return { signal: { ...tokens, ...(cost !== undefined ? { cost } : {}) }, ignored };
}
