// GraphQL cost in the response body, as Shopify's Admin GraphQL API (and others after it) reports it:
//   "extensions": { "cost": { "requestedQueryCost": 101, "actualQueryCost": 46,
//     "throttleStatus": { "maximumAvailable": 1000, "currentlyAvailable": 954, "restoreRate": 50 } } }
// The actual cost reconciles the job's admitted cost; the throttle status is a leaky bucket of points
// whose time to refill is its reset (the same budget rule as the REST call-limit header); a query
// refused for cost comes back 200 with an error whose code is THROTTLED, and may be retried once the
// bucket has restored the requested cost. A queue paced this way counts points: its rate is the restore
// rate, a job's cost its estimated query cost.
import { MAX_RETRY_AFTER_MS, jsonCount as count, type IgnoredHeader, type UpstreamSignal } from './signal.js';

/** Where the parsed values come from, as an ignored value names it. */
const SOURCE = 'extensions.cost';

export interface GraphqlCost {
  signal: UpstreamSignal;
  /** The query was refused for its cost (errors[].extensions.code THROTTLED). */
  throttled: boolean;
  /** When throttled: the wait until the bucket holds the requested cost again (ms). */
  waitMs?: number;
  ignored: IgnoredHeader[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads a parsed JSON body; undefined when it carries no GraphQL cost. */
export function parseGraphqlCost(body: unknown): GraphqlCost | undefined {
  if (!isRecord(body) || !isRecord(body.extensions) || !isRecord(body.extensions.cost)) return undefined;
  const cost = body.extensions.cost;
  const ignored: IgnoredHeader[] = [];
  const signal: UpstreamSignal = {};
  if (cost.actualQueryCost !== undefined && cost.actualQueryCost !== null) {
    const actual = count(cost.actualQueryCost);
    if (actual.ok) signal.cost = actual.value;
    else ignored.push({ header: `${SOURCE}.actualQueryCost`, reason: actual.reason });
  }
  let restore: number | undefined;
  let available: number | undefined;
  if (isRecord(cost.throttleStatus)) {
    const s = cost.throttleStatus;
    const [max, avail, rate] = [count(s.maximumAvailable), count(s.currentlyAvailable), count(s.restoreRate)];
    const bad = [max, avail, rate].find((p) => !p.ok);
    if (bad && !bad.ok) ignored.push({ header: `${SOURCE}.throttleStatus`, reason: bad.reason });
    else if (max.ok && avail.ok && rate.ok) {
      if (rate.value === 0 || avail.value > max.value) ignored.push({ header: `${SOURCE}.throttleStatus`, reason: 'inconsistent' });
      else {
        restore = rate.value;
        available = avail.value;
        signal.limit = max.value;
        signal.remaining = Math.floor(avail.value);
        signal.resetMs = Math.ceil(((max.value - avail.value) / rate.value) * 1000);
      }
    }
  }
  const errors = Array.isArray(body.errors) ? body.errors : [];
  const throttled = errors.some((e) => isRecord(e) && isRecord(e.extensions) && e.extensions.code === 'THROTTLED');
  if (!throttled) return { signal, throttled, ignored };
  // Refused for cost: wait until the bucket has restored what the query asked for (at least 1 s when unknown).
  const requested = count(cost.requestedQueryCost);
  const waitMs =
    restore !== undefined && available !== undefined && requested.ok ? Math.ceil((Math.max(0, requested.value - available) / restore) * 1000) : 1_000;
  return { signal, throttled, waitMs: Math.min(Math.max(waitMs, 1), MAX_RETRY_AFTER_MS), ignored };
}
