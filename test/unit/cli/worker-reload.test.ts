// WorkerReloader: a changed queues section restarts the workers; a restart that fails goes back to the
// previous queues, and a later change still restarts them (before the fix, one failed restart left the
// process without workers, and every later change was ignored). The start function here stands in for
// runWorkers: what is tested is the order of stops and starts, not Redis.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { parseRules } from '../../../src/rules/rules.js';
import type { QueueRule } from '../../../src/rules/queues.js';
import { WorkerReloader } from '../../../src/cli/worker-reload.js';

const queues = (rate: number, handler = './h.mjs'): readonly QueueRule[] =>
  parseRules(`queues:\n  - name: q\n    rate_per_second: ${rate}\n    capacity: 10\n    handler: { type: module, path: ${handler} }\n`, { filename: 'rules.yaml' }).queues;

function harness() {
  const events: string[] = [];
  const lines: { event?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as { event?: string }) });
  let open = 0;
  let failing = false;
  const reloader = new WorkerReloader(async (qs) => {
    const label = `${qs[0]!.throttle.ratePerSecond}/s`;
    // A handler path that does not load makes the start fail, as runWorkers does.
    if (failing || (qs[0]!.handler.type === 'module' && qs[0]!.handler.path.includes('missing'))) {
      events.push(`fail ${label}`);
      throw new Error('Cannot find module');
    }
    events.push(`start ${label}`);
    open++;
    return {
      queues: qs.map((q) => q.name),
      close: async () => {
        events.push(`stop ${label}`);
        open--;
      },
    };
  }, logger);
  return { reloader, events, lines, running: () => open, failAll: (on: boolean) => void (failing = on) };
}

describe('WorkerReloader', () => {
  it('restarts on a changed queues section, and not on an unchanged one', async () => {
    const h = harness();
    await h.reloader.startInitial(queues(1));
    await h.reloader.reload(queues(1), 'v1');
    await h.reloader.reload(queues(2), 'v2');
    expect(h.events).toEqual(['start 1/s', 'stop 1/s', 'start 2/s']);
    expect(h.lines.filter((l) => l.event === 'workers_restarted')).toHaveLength(1);
    expect(h.running()).toBe(1);
  });

  it('a failed restart goes back to the previous queues, and a later change restarts again', async () => {
    const h = harness();
    await h.reloader.startInitial(queues(1));
    await h.reloader.reload(queues(2, './missing.mjs'), 'v2');
    expect(h.events).toEqual(['start 1/s', 'stop 1/s', 'fail 2/s', 'start 1/s']);
    expect(h.running()).toBe(1);
    expect(h.reloader.queues).toEqual(['q']);
    expect(h.lines.map((l) => l.event).filter(Boolean)).toEqual(['workers_restart_failed', 'workers_restored']);

    await h.reloader.reload(queues(3), 'v3');
    expect(h.events.slice(4)).toEqual(['stop 1/s', 'start 3/s']);
    expect(h.running()).toBe(1);
    expect(h.lines.at(-1)!.event).toBe('workers_restarted');

    await h.reloader.close();
    expect(h.running()).toBe(0);
    // Closed: a reload after close starts nothing.
    await h.reloader.reload(queues(4), 'v4');
    expect(h.running()).toBe(0);
  });

  it('when the previous queues cannot start either, none run, and the next reload starts workers', async () => {
    const h = harness();
    await h.reloader.startInitial(queues(1));
    h.failAll(true); // Redis gone, say: every start fails
    await h.reloader.reload(queues(2), 'v2');
    expect(h.events).toEqual(['start 1/s', 'stop 1/s', 'fail 2/s', 'fail 1/s']);
    expect(h.running()).toBe(0);
    expect(h.reloader.queues).toEqual([]);
    expect(h.lines.map((l) => l.event).filter(Boolean)).toEqual(['workers_restart_failed', 'workers_stopped']);
    h.failAll(false);
    // The same queues as the failed attempt: nothing runs, so they are started now.
    await h.reloader.reload(queues(2), 'v3');
    expect(h.events.at(-1)).toBe('start 2/s');
    expect(h.running()).toBe(1);
    expect(h.reloader.queues).toEqual(['q']);
  });
});
