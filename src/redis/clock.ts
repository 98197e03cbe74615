// Where "now" comes from: Redis TIME inside the scripts (default), the caller, or this process.

/** A source of wall-clock time in milliseconds. Tests use ManualClock; production the system clock. */
export interface Clock {
  nowMs(): number;
}

export const systemClock: Clock = { nowMs: () => Date.now() };

/** A clock that moves only when told to, for reproducible tests and simulations. */
export class ManualClock implements Clock {
  constructor(private currentMs = 0) {}
  nowMs(): number {
    return this.currentMs;
  }
  set(ms: number): void {
    this.currentMs = ms;
  }
  advance(ms: number): void {
    this.currentMs += ms;
  }
}

/**
 * 'redis': scripts read Redis TIME, so app servers with skewed clocks agree (the default).
 * 'client': this process's clock is sent with every call, for managed Redis that refuses TIME in scripts.
 */
export type ClockSource = 'redis' | 'client';

/**
 * The time argument a script receives: '' means "read Redis TIME"; otherwise an integer count of
 * `unit` (ms or µs) since the epoch of whatever clock the caller uses.
 */
export function timeArg(nowMs: number | undefined, source: ClockSource, clock: Clock, unit: 'ms' | 'us'): string {
  const ms = nowMs ?? (source === 'client' ? clock.nowMs() : undefined);
  if (ms === undefined) return '';
  return String(unit === 'us' ? Math.round(ms * 1000) : Math.round(ms));
}
