// A shutdown that does not finish within the grace period, or a second signal, forces the exit and the
// log says so (event shutdown_forced, with the reason). Issue 8, defect 5.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { closeOnSignals } from '../../../src/cli/runtime.js';

function harness() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const exits: number[] = [];
  const handlers = new Map<string, (s: NodeJS.Signals) => void>();
  closeOnSignals(
    { logger, close: () => new Promise<void>(() => undefined) }, // a shutdown that never finishes
    { graceMs: 50, exit: (code) => void exits.push(code), on: (signal, listener) => void handlers.set(signal, listener) },
  );
  return { lines, exits, signal: (s: NodeJS.Signals) => handlers.get(s)!(s) };
}

describe('forced shutdown', () => {
  it('the grace period expires: one shutdown_forced line, then exit 1', async () => {
    const h = harness();
    h.signal('SIGTERM');
    expect(h.exits).toEqual([]);
    await new Promise((r) => setTimeout(r, 300));
    expect(h.exits).toEqual([1]);
    const forced = h.lines.filter((l) => l.event === 'shutdown_forced');
    expect(forced).toHaveLength(1);
    expect(forced[0]).toMatchObject({ level: 50, reason: 'grace_period_expired', graceMs: 50 });
    expect(forced[0]!.waitedMs as number).toBeGreaterThanOrEqual(45);
  });

  it('a second signal: shutdown_forced with reason second_signal', () => {
    const h = harness();
    h.signal('SIGTERM');
    h.signal('SIGINT');
    expect(h.exits).toEqual([1]);
    expect(h.lines.filter((l) => l.event === 'shutdown_forced')).toEqual([expect.objectContaining({ reason: 'second_signal', signal: 'SIGINT' })]);
  });
});
