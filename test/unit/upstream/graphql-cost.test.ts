// The GraphQL cost extension (Shopify's Admin GraphQL API): actual cost, the bucket as a budget, and a
// query refused for its cost; bad values ignored with a reason, never thrown.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseGraphqlCost } from '../../../src/upstream/index.js';

const body = (cost: unknown, errors?: unknown) => ({ data: {}, ...(errors ? { errors } : {}), extensions: { cost } });

describe('parseGraphqlCost', () => {
  it('reads the actual cost and the bucket: time to refill is the reset', () => {
    expect(parseGraphqlCost(body({ requestedQueryCost: 101, actualQueryCost: 46, throttleStatus: { maximumAvailable: 1000, currentlyAvailable: 954, restoreRate: 50 } }))).toEqual({
      signal: { cost: 46, limit: 1000, remaining: 954, resetMs: 920 },
      throttled: false,
      ignored: [],
    });
  });

  it('a query refused for its cost waits until the requested points are back', () => {
    const got = parseGraphqlCost(
      body({ requestedQueryCost: 120, actualQueryCost: null, throttleStatus: { maximumAvailable: 1000, currentlyAvailable: 20, restoreRate: 50 } }, [
        { message: 'Throttled', extensions: { code: 'THROTTLED' } },
      ]),
    );
    expect(got).toEqual({ signal: { limit: 1000, remaining: 20, resetMs: 19_600 }, throttled: true, waitMs: 2_000, ignored: [] });
  });

  it('nothing to read: undefined; bad values are ignored with a reason', () => {
    expect(parseGraphqlCost('text')).toBeUndefined();
    expect(parseGraphqlCost({ data: {} })).toBeUndefined();
    expect(parseGraphqlCost(body({ actualQueryCost: -3, throttleStatus: { maximumAvailable: 10, currentlyAvailable: 20, restoreRate: 1 } }))).toEqual({
      signal: {},
      throttled: false,
      ignored: [
        { header: 'extensions.cost.actualQueryCost', reason: 'negative' },
        { header: 'extensions.cost.throttleStatus', reason: 'inconsistent' },
      ],
    });
    expect(parseGraphqlCost(body({ actualQueryCost: 'x', throttleStatus: { maximumAvailable: 10, currentlyAvailable: 5, restoreRate: 0 } }))?.ignored.map((i) => i.reason)).toEqual([
      'malformed',
      'inconsistent',
    ]);
  });

  it('never throws, and never reads a budget faster than the numbers allow', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.anything(), (a, b) => {
        for (const input of [a, b, body(a), body({ throttleStatus: a, actualQueryCost: b })]) {
          const got = parseGraphqlCost(input);
          if (got?.signal.remaining !== undefined) expect(got.signal.remaining).toBeLessThanOrEqual(got.signal.limit!);
          if (got?.signal.resetMs !== undefined) expect(got.signal.resetMs).toBeGreaterThanOrEqual(0);
        }
      }),
    );
  });
});
