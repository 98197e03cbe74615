// RefusalLog: the first refusal of a client by a rule per interval is a line, the rest are counted and
// summed up per rule when the interval ends; the identity is hashed only for lines that are written.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { RefusalLog } from '../../../src/http/refusal-log.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: pino({ level: 'info', base: null, timestamp: false }, stream) };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('RefusalLog', () => {
  it('logs the first refusal of each (rule, client), counts the rest, and sums them up per rule', async () => {
    const { lines, logger } = capture();
    const log = new RefusalLog(logger, 'request refused', 60_000);
    let hashed = 0;
    const fields = (rule: string, identity: string) => () => {
      hashed++;
      return { rule, identity: `h(${identity})`, rulesVersion: 'v1', reason: 'limit_exceeded' };
    };
    for (let i = 0; i < 100; i++) log.refused('api.ip', 'ip=1.2.3.4', fields('api.ip', 'ip=1.2.3.4'));
    log.refused('api.ip', 'ip=5.6.7.8', fields('api.ip', 'ip=5.6.7.8'));
    log.refused('api.ip', 'ip=5.6.7.8', fields('api.ip', 'ip=5.6.7.8'));
    log.refused('api.user', 'ip=1.2.3.4', fields('api.user', 'ip=1.2.3.4'));
    await settle();
    expect(lines).toEqual([
      { level: 30, event: 'refused', rule: 'api.ip', identity: 'h(ip=1.2.3.4)', rulesVersion: 'v1', reason: 'limit_exceeded', msg: 'request refused' },
      { level: 30, event: 'refused', rule: 'api.ip', identity: 'h(ip=5.6.7.8)', rulesVersion: 'v1', reason: 'limit_exceeded', msg: 'request refused' },
      { level: 30, event: 'refused', rule: 'api.user', identity: 'h(ip=1.2.3.4)', rulesVersion: 'v1', reason: 'limit_exceeded', msg: 'request refused' },
    ]);
    expect(hashed).toBe(3);
    log.flush();
    await settle();
    expect(lines.slice(3)).toEqual([
      { level: 30, event: 'refusals_suppressed', rule: 'api.ip', refusals: 100, clients: 2, intervalMs: 60_000, msg: 'refusals not logged one by one in this interval' },
    ]);
    // A new interval: each client's first refusal is a line again; nothing to sum up, no summary.
    log.refused('api.ip', 'ip=1.2.3.4', fields('api.ip', 'ip=1.2.3.4'));
    log.flush();
    await settle();
    expect(lines.slice(4).map((l) => l.event)).toEqual(['refused']);
  });

  it('remembers at most maxClients per interval; the others are counted, not logged', async () => {
    const { lines, logger } = capture();
    const log = new RefusalLog(logger, 'decision refused', 60_000, 2);
    for (const c of ['a', 'b', 'c', 'd']) log.refused('r', c, () => ({ rule: 'r', identity: c, rulesVersion: 'v', reason: 'limit_exceeded' }));
    log.flush();
    await settle();
    expect(lines.map((l) => [l.event, l.identity ?? l.refusals])).toEqual([
      ['refused', 'a'],
      ['refused', 'b'],
      ['refusals_suppressed', 2],
    ]);
  });
});
