// A decision answered by its fail mode may still run in Redis afterwards (Redis was slow, not gone):
// at most once per request, and each such late run is counted where its reply can be seen.
// Issue 8, defect 8.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics } from '../../../src/index.js';
import { useBackend } from '../../helpers/fixtures.js';

const ctx = useBackend('single');
const metrics = new Metrics();
let admin: Redis;
beforeAll(() => {
  admin = new Redis(ctx.backend.server!.port, '127.0.0.1');
});
afterAll(() => admin?.disconnect());

const late = (text: string, algorithm: string, charged: boolean) =>
  Number(new RegExp(`^sluice_late_decisions_total\\{algorithm="${algorithm}",charged="${charged}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);

describe('a decision answered by its fail mode and run later', () => {
  it('is charged at most once, and every late run is counted', async () => {
    const sluice = ctx.backend.sluice({ observer: metrics });
    const closed = sluice.limiter({ algorithm: 'fixed-window', limit: 1_000, windowMs: 3_600_000, failMode: 'closed', timeoutMs: 100 });
    const open = sluice.limiter({ algorithm: 'sliding-log', limit: 3, windowMs: 3_600_000, failMode: 'open', timeoutMs: 100 });
    expect((await closed.limit('k')).remaining).toBe(999);
    expect((await open.peek('o')).remaining).toBe(3);
    // Load the batched form of both scripts (calls of one tick travel as one batch): a batch whose script
    // Redis does not have yet answers NOSCRIPT after the stall, and is then never sent again (every caller
    // was answered), so nothing would run late at all. Peeks charge nothing.
    await Promise.all([closed.peek('k'), closed.peek('k'), open.peek('o'), open.peek('o')]);
    // Redis stalls for 600 ms (every client's commands wait in their sockets), then runs them.
    await admin.call('CLIENT', 'PAUSE', '600', 'ALL');
    const answers = await Promise.all([...Array.from({ length: 20 }, () => closed.limit('k')), ...Array.from({ length: 5 }, () => open.limit('o'))]);
    expect(answers.slice(0, 20).every((d) => d.failure === 'fail-closed' && !d.allowed)).toBe(true);
    expect(answers.slice(20).every((d) => d.failure === 'fail-open' && d.allowed)).toBe(true);
    await new Promise((r) => setTimeout(r, 900));
    // Each refused-by-fail-mode call ran once, late: charged once, never twice.
    expect((await closed.peek('k')).remaining).toBe(1_000 - 1 - 20);
    expect((await open.peek('o')).remaining).toBe(0);
    const text = await metrics.text();
    expect(late(text, 'fixed-window', true)).toBe(20);
    expect(late(text, 'sliding-log', true)).toBe(3);
    expect(late(text, 'sliding-log', false)).toBe(2);
  });
});
