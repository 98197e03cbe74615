// Human durations of the rules file ("1500ms", "30s", "1m30s", "2h", "1d") and their schema: they
// are converted to integer milliseconds here and never travel further as text.
import { z } from 'zod';

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/y;

/**
 * Milliseconds of a duration made of one or more `<number><unit>` parts, units ms, s, m, h, d
 * (largest first, each at most once): `250ms`, `1.5s`, `1m30s`, `1d`.
 * @returns the integer ms, or a message saying what is wrong.
 */
export function parseDuration(text: string): number | string {
  const s = text.trim();
  const help = "use a number and a unit (ms, s, m, h, d), e.g. '1500ms', '30s' or '1m30s'";
  if (s === '') return `empty duration: ${help}`;
  let total = 0;
  let at = 0;
  let lastRank = -1;
  const ranks = Object.keys(UNIT_MS).reverse();
  while (at < s.length) {
    PART.lastIndex = at;
    const m = PART.exec(s);
    if (!m) return `'${text}' is not a duration: ${help}`;
    const unit = m[2] as keyof typeof UNIT_MS;
    const rank = ranks.indexOf(unit);
    if (rank <= lastRank) return `'${text}' is not a duration: give units largest first, each once (e.g. '1m30s')`;
    lastRank = rank;
    total += Number(m[1]) * UNIT_MS[unit];
    at = PART.lastIndex;
  }
  const ms = Math.round(total * 1e6) / 1e6;
  if (!Number.isInteger(ms)) return `'${text}' is not a whole number of milliseconds`;
  return ms;
}

/**
 * The schema of a duration field: a string parsed by {@link parseDuration} to integer ms, between
 * `minMs` (default 1) and `maxMs`. A bare number is refused: "60" could mean seconds or ms.
 */
export function durationSchema(options: { minMs?: number; maxMs?: number } = {}) {
  const min = options.minMs ?? 1;
  const max = options.maxMs ?? 365 * UNIT_MS.d;
  return z.union([z.string(), z.number()]).transform((value, ctx) => {
    if (typeof value === 'number') {
      ctx.addIssue({ code: 'custom', message: `a duration needs a unit: write '${value}ms' or '${value}s'` });
      return z.NEVER;
    }
    const ms = parseDuration(value);
    if (typeof ms === 'string') {
      ctx.addIssue({ code: 'custom', message: ms });
      return z.NEVER;
    }
    if (ms < min || ms > max) {
      ctx.addIssue({ code: 'custom', message: `'${value}' must be between ${formatDuration(min)} and ${formatDuration(max)}` });
      return z.NEVER;
    }
    return ms;
  });
}

/** Compact text of a duration in ms, the inverse of {@link parseDuration} for whole units: 90000 -> '1m30s'. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0ms';
  if (!Number.isInteger(ms) || ms < 1000) return `${ms}ms`;
  let rest = ms;
  let out = '';
  for (const [unit, size] of [['d', UNIT_MS.d], ['h', UNIT_MS.h], ['m', UNIT_MS.m], ['s', UNIT_MS.s]] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) out += `${n}${unit}`;
    rest -= n * size;
  }
  return rest > 0 ? `${out}${rest}ms` : out;
}
