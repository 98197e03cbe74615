// Spend quotas: calls or cost units per calendar day or month, per key (each lane) or per queue, in a
// time zone. The schema is the single source of truth; the calendar arithmetic (time zones, daylight
// saving, month lengths) is done here with Luxon and handed to the scripts as plain µs boundaries, so
// Lua never needs a calendar. Quotas are counted where starts are decided (lua/throttle-dispatch.lua),
// which is atomic across processes: a window never sees more than its limit started.
import { DateTime } from 'luxon';
import { z } from 'zod';

/** At most this many quotas per queue (each costs the dispatcher one counter read per start). */
export const MAX_QUOTAS = 4;

/** True when `zone` is an IANA time zone this Node knows (`UTC`, `Europe/Berlin`, `America/New_York`, ...). */
export function validTimeZone(zone: string): boolean {
  return DateTime.now().setZone(zone).isValid;
}

export const quotaSchema = z
  .object({
    /** Who the quota is for: each key (lane) of the queue, or the whole queue (all keys together). */
    scope: z.enum(['key', 'queue']),
    /** The calendar window: a day or a month, starting at midnight (the first of the month) in `timeZone`. */
    period: z.enum(['day', 'month']),
    /** What is counted: started jobs (`calls`) or their cost units (`cost`). */
    unit: z.enum(['calls', 'cost']).default('calls'),
    /** The most that may start within one window. */
    limit: z.number().int().positive().max(1e12),
    /** IANA time zone of the calendar (default UTC). */
    timeZone: z
      .string()
      .default('UTC')
      .refine((zone) => validTimeZone(zone), { message: 'not a time zone this runtime knows (an IANA name such as UTC or Europe/Berlin)' }),
    /**
     * When the window's quota is spoken for: `refuse` new submits (429, Retry-After = until the window
     * resets), or `defer` them (admitted; they start in a later window).
     */
    whenExhausted: z.enum(['refuse', 'defer']).default('refuse'),
  })
  .strict();
export type QuotaConfig = z.infer<typeof quotaSchema>;
export type QuotaInput = z.input<typeof quotaSchema>;

export const quotasSchema = z.array(quotaSchema).max(MAX_QUOTAS);

/** The windows around an instant, epoch ms: the one before, the current one, and the next one. */
export interface QuotaWindows {
  previousStartMs: number;
  startMs: number;
  endMs: number;
  nextEndMs: number;
}

/** The calendar windows of `quota` around `nowMs` (daylight saving days are 23 or 25 hours long). */
export function quotaWindows(quota: Pick<QuotaConfig, 'period' | 'timeZone'>, nowMs: number): QuotaWindows {
  const unit = quota.period;
  const start = DateTime.fromMillis(nowMs, { zone: quota.timeZone }).startOf(unit);
  const step = unit === 'day' ? { days: 1 } : { months: 1 };
  return {
    previousStartMs: start.minus(step).toMillis(),
    startMs: start.toMillis(),
    endMs: start.plus(step).toMillis(),
    nextEndMs: start.plus(step).plus(step).toMillis(),
  };
}

/**
 * The quotas as the scripts take them, one argument: per quota `scope,unit,limit,mode,prev,start,end,next`
 * (scope k|q, unit n|c, mode r|d, boundaries in µs), quotas separated by `;`; '' when there are none.
 * Windows are computed for `nowMs` (this process's clock, or an injected time); a script whose Redis time
 * lies in the window before or after still finds the right one.
 */
export function quotaArg(quotas: readonly QuotaConfig[] | undefined, nowMs: number): string {
  if (!quotas || quotas.length === 0) return '';
  return packQuotas(quotas, quotas.map((q) => quotaWindows(q, nowMs)));
}

function packQuotas(quotas: readonly QuotaConfig[], windows: readonly QuotaWindows[]): string {
  return quotas
    .map((q, i) => {
      const w = windows[i]!;
      return [q.scope === 'key' ? 'k' : 'q', q.unit === 'cost' ? 'c' : 'n', q.limit, q.whenExhausted === 'defer' ? 'd' : 'r', w.previousStartMs * 1000, w.startMs * 1000, w.endMs * 1000, w.nextEndMs * 1000].join(',');
    })
    .join(';');
}

/**
 * The cost quotas a job the lanes admit could exceed (a lane admits up to its capacity in cost, so a cost
 * quota below the largest capacity would hold such a job, and its lane, forever): each one's index and
 * the message. One rule for the throttle's schema and the rules file's check.
 */
export function unreachableCostQuotas(quotas: readonly { unit?: unknown; limit?: unknown }[], capacities: readonly number[]): { index: number; message: string }[] {
  if (capacities.length === 0) return [];
  const largest = Math.max(...capacities);
  return quotas.flatMap((q, index) =>
    q.unit === 'cost' && typeof q.limit === 'number' && q.limit < largest
      ? [{ index, message: `a job may cost up to ${largest} (the largest lane capacity), more than this quota's limit of ${q.limit}: it could never start; raise the limit or lower the capacity` }]
      : [],
  );
}

/** The Redis key suffix of a quota's counter in one window: `<lane or global key>:qu:<index>:<window start µs>`. */
export function quotaCounterSuffix(index: number, windowStartMs: number): string {
  return `:qu:${index}:${windowStartMs * 1000}`;
}

/** A quota's use, as lane and queue status show it. */
export interface QuotaUse {
  scope: 'key' | 'queue';
  period: 'day' | 'month';
  unit: 'calls' | 'cost';
  limit: number;
  /** Started (calls or cost units) in the current window. */
  used: number;
  /** Epoch ms at which the current window ends and the count starts again. */
  resetsAtMs: number;
  timeZone: string;
}

/**
 * The quota argument of a throttle's scripts, cached while the instant stays inside every quota's
 * current window (the calendar arithmetic then runs once per window, not once per admission).
 */
export class QuotaArgs {
  private cached = '';
  private validFromMs = Infinity;
  private validUntilMs = -Infinity;

  constructor(readonly quotas: readonly QuotaConfig[]) {}

  get any(): boolean {
    return this.quotas.length > 0;
  }

  /** The argument for a script run at `nowUs` (the scripts' now argument: µs as a string, '' = this process's clock). */
  arg(nowUs: string): string {
    if (this.quotas.length === 0) return '';
    const nowMs = nowUs === '' ? Date.now() : Number(nowUs) / 1000;
    if (nowMs >= this.validFromMs && nowMs < this.validUntilMs) return this.cached;
    const windows = this.quotas.map((q) => quotaWindows(q, nowMs));
    this.cached = packQuotas(this.quotas, windows);
    this.validFromMs = Math.max(...windows.map((w) => w.startMs));
    this.validUntilMs = Math.min(...windows.map((w) => w.endMs));
    return this.cached;
  }
}
