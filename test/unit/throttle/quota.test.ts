// The calendar of spend quotas (src/throttle/quota.ts): windows in a time zone across daylight saving
// and month ends, the scripts' argument and its cache, and the schema's refusals.
import { describe, expect, it } from 'vitest';
import { QuotaArgs, quotaArg, quotaSchema, quotaWindows } from '../../../src/throttle/quota.js';
import { parseThrottleConfig } from '../../../src/throttle/config.js';

const ms = (iso: string) => Date.parse(iso);

describe('quota windows', () => {
  it('a UTC day', () => {
    expect(quotaWindows({ period: 'day', timeZone: 'UTC' }, ms('2027-01-15T08:00:00Z'))).toEqual({
      previousStartMs: ms('2027-01-14T00:00:00Z'),
      startMs: ms('2027-01-15T00:00:00Z'),
      endMs: ms('2027-01-16T00:00:00Z'),
      nextEndMs: ms('2027-01-17T00:00:00Z'),
    });
  });

  it('the days around daylight saving in Berlin are 23 and 25 hours', () => {
    // 2027-03-28: clocks go from 02:00 CET to 03:00 CEST.
    const spring = quotaWindows({ period: 'day', timeZone: 'Europe/Berlin' }, ms('2027-03-28T12:00:00Z'));
    expect(spring.startMs).toBe(ms('2027-03-27T23:00:00Z'));
    expect(spring.endMs - spring.startMs).toBe(23 * 3600_000);
    // 2027-10-31: from 03:00 CEST back to 02:00 CET.
    const autumn = quotaWindows({ period: 'day', timeZone: 'Europe/Berlin' }, ms('2027-10-31T12:00:00Z'));
    expect(autumn.startMs).toBe(ms('2027-10-30T22:00:00Z'));
    expect(autumn.endMs - autumn.startMs).toBe(25 * 3600_000);
  });

  it('months end where the calendar says (February of a leap year, in New York)', () => {
    const feb = quotaWindows({ period: 'month', timeZone: 'America/New_York' }, ms('2028-02-29T23:30:00-05:00'));
    expect(feb.startMs).toBe(ms('2028-02-01T00:00:00-05:00'));
    expect(feb.endMs).toBe(ms('2028-03-01T00:00:00-05:00'));
    // March starts in EST and the next window after it in EDT.
    expect(feb.nextEndMs).toBe(ms('2028-04-01T00:00:00-04:00'));
    expect(feb.previousStartMs).toBe(ms('2028-01-01T00:00:00-05:00'));
  });

  it('the instant of midnight belongs to the new day', () => {
    const w = quotaWindows({ period: 'day', timeZone: 'Asia/Tokyo' }, ms('2027-01-15T15:00:00Z'));
    expect(w.startMs).toBe(ms('2027-01-15T15:00:00Z'));
  });
});

describe('the scripts argument', () => {
  const quotas = [quotaSchema.parse({ scope: 'key', period: 'day', limit: 5 }), quotaSchema.parse({ scope: 'queue', period: 'month', unit: 'cost', limit: 90, whenExhausted: 'defer' })];

  it('packs each quota with its three windows in µs', () => {
    const at = ms('2027-01-15T08:00:00Z');
    const [day, month] = quotaArg(quotas, at).split(';');
    expect(day).toBe(['k', 'n', 5, 'r', ms('2027-01-14T00:00:00Z') * 1000, ms('2027-01-15T00:00:00Z') * 1000, ms('2027-01-16T00:00:00Z') * 1000, ms('2027-01-17T00:00:00Z') * 1000].join(','));
    expect(month).toBe(['q', 'c', 90, 'd', ms('2026-12-01T00:00:00Z') * 1000, ms('2027-01-01T00:00:00Z') * 1000, ms('2027-02-01T00:00:00Z') * 1000, ms('2027-03-01T00:00:00Z') * 1000].join(','));
    expect(quotaArg([], at)).toBe('');
  });

  it('is cached within the windows and recomputed past a reset', () => {
    const args = new QuotaArgs(quotas);
    const a = args.arg(String(ms('2027-01-15T08:00:00Z') * 1000));
    expect(args.arg(String(ms('2027-01-15T23:59:59Z') * 1000))).toBe(a);
    const b = args.arg(String(ms('2027-01-16T00:00:00Z') * 1000));
    expect(b).not.toBe(a);
    expect(b).toBe(quotaArg(quotas, ms('2027-01-16T00:00:00Z')));
    expect(new QuotaArgs([]).arg('')).toBe('');
  });
});

describe('quota configuration', () => {
  it('refuses an unknown time zone, a period other than day or month, and more than four quotas', () => {
    expect(quotaSchema.safeParse({ scope: 'key', period: 'day', limit: 1, timeZone: 'Mars/Olympus_Mons' }).success).toBe(false);
    expect(quotaSchema.safeParse({ scope: 'key', period: 'week', limit: 1 }).success).toBe(false);
    const q = { scope: 'key', period: 'day', limit: 1 };
    expect(() => parseThrottleConfig('t', { ratePerSecond: 1, capacity: 1, quotas: [q, q, q, q, q] })).toThrow(/quotas/);
  });

  it('refuses a cost quota a job the lane admits could exceed, plans included', () => {
    expect(() => parseThrottleConfig('t', { ratePerSecond: 1, capacity: 50, quotas: [{ scope: 'key', period: 'day', unit: 'cost', limit: 40 }] })).toThrow(/could never start/);
    expect(() =>
      parseThrottleConfig('t', { ratePerSecond: 1, capacity: 10, plans: { pro: { ratePerSecond: 5, capacity: 100 } }, quotas: [{ scope: 'queue', period: 'month', unit: 'cost', limit: 50 }] }),
    ).toThrow(/up to 100/);
    // Calls quotas count 1 per job: any limit will do.
    expect(parseThrottleConfig('t', { ratePerSecond: 1, capacity: 50, quotas: [{ scope: 'key', period: 'day', limit: 1 }] }).quotas).toHaveLength(1);
  });
});
