// Text and JSON renderings of a replay: one detailed table for a single policy, or the policies side
// by side (A, B, ...) so a fixed window's boundary burst shows next to a sliding log's refusal.
import type { Policy } from '../limiters/policy.js';
import { describePolicy } from '../rules/describe.js';
import type { ReplayResult, SimulatedDecision } from './simulate-run.js';

type Align = 'left' | 'right';

/** Lays out rows of cells in columns two spaces apart; trailing spaces are trimmed. */
export function layout(rows: readonly (readonly string[])[], align: readonly Align[]): string[] {
  const widths = align.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows.map((r) =>
    align
      .map((a, c) => (a === 'right' ? (r[c] ?? '').padStart(widths[c]!) : (r[c] ?? '').padEnd(widths[c]!)))
      .join('  ')
      .trimEnd(),
  );
}

const seconds = (ms: number) => (ms / 1000).toFixed(3);
const label = (i: number) => String.fromCharCode(65 + (i % 26)) + (i >= 26 ? String(Math.floor(i / 26)) : '');

function cell(d: SimulatedDecision): string {
  return d.allowed ? `allow   ${d.remaining} left` : `REJECT  retry ${seconds(d.retryAfterMs)}s`;
}

/** The replay as text: a detailed table for one policy, a side-by-side table for several. */
export function renderReplay(policies: readonly Policy[], timesS: readonly number[], result: ReplayResult): string {
  const describe = (p: Policy) => describePolicy(p, { operational: false });
  const allowed = policies.map((_, p) => result.filter((row) => row[p]!.allowed).length);
  const lines: string[] = [];
  if (policies.length === 1) {
    lines.push(describe(policies[0]!));
    const rows = [['#', 't (s)', 'result', 'remaining', 'retry after (s)', 'full at (s)']];
    result.forEach((row, i) => {
      const d = row[0]!;
      rows.push([String(i + 1), timesS[i]!.toFixed(3), d.allowed ? 'allow' : 'REJECT', String(d.remaining), d.allowed ? '-' : seconds(d.retryAfterMs), seconds(d.resetAtMs)]);
    });
    lines.push(...layout(rows, ['right', 'right', 'left', 'right', 'right', 'right']));
  } else {
    policies.forEach((p, i) => lines.push(`${label(i)}  ${describe(p)}`));
    const rows = [['#', 't (s)', ...policies.map((_, i) => label(i))]];
    result.forEach((row, i) => rows.push([String(i + 1), timesS[i]!.toFixed(3), ...row.map(cell)]));
    lines.push(...layout(rows, ['right', 'right', ...policies.map((): Align => 'left')]));
  }
  const total = timesS.length;
  lines.push(`allowed: ${policies.map((_, p) => (policies.length === 1 ? '' : `${label(p)} `) + `${allowed[p]} of ${total}`).join(', ')}`);
  return lines.join('\n') + '\n';
}

/** The replay as one JSON document. */
export function replayJson(policies: readonly Policy[], timesS: readonly number[], cost: number, result: ReplayResult): string {
  return (
    JSON.stringify({
      policies: policies.map((policy, i) => ({ label: label(i), description: describePolicy(policy, { operational: false }), policy })),
      cost,
      rows: result.map((decisions, i) => ({ t: timesS[i], decisions })),
      allowed: policies.map((_, p) => result.filter((row) => row[p]!.allowed).length),
    }) + '\n'
  );
}
