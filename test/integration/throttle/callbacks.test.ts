// Callback deliveries on a real Redis against real HTTP receivers on 127.0.0.1: a receiver that hangs
// holds one delivery for the attempt timeout and never the others; its attempt is recorded with the
// timeout; a private address is refused at delivery unless allowed, and the refusal is recorded.
import { createServer, type Server } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { useBackend } from '../../helpers/fixtures.js';
import { until } from '../../helpers/throttle-procs.js';

const ctx = useBackend('single');
const servers: Server[] = [];
afterAll(() => {
  for (const s of servers) s.closeAllConnections();
});

async function receiver(hang: boolean): Promise<{ url: string; got: number[] }> {
  const got: number[] = [];
  const server = createServer((req, res) => {
    req.resume();
    got.push(Date.now());
    if (!hang) res.writeHead(204).end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/h`, got };
}

describe('callback deliveries', () => {
  it('a hanging receiver does not hold up another; its attempt is recorded with the timeout', async () => {
    const throttle = ctx.sluice.throttle('cbq', { ratePerSecond: 10, capacity: 5 });
    const hanging = await receiver(true);
    const good = await receiver(false);
    throttle.callbacks.start('secret', { timeoutMs: 1_500, concurrency: 2 });
    await throttle.callbacks.enqueue('jhang', 'completed', hanging.url, true, '{"a":1}');
    await until(() => hanging.got.length === 1, 10_000, 'the hanging delivery to be sent');
    await throttle.callbacks.enqueue('jgood', 'completed', good.url, true, '{"b":2}');
    await until(async () => (await throttle.callbacks.attempts('jgood')).length === 1, 10_000, 'the good delivery');
    // Delivered while the hanging one still waits for its answer.
    expect(await throttle.callbacks.attempts('jhang')).toEqual([]);
    expect(await throttle.callbacks.attempts('jgood')).toMatchObject([{ delivered: true, status: 204 }]);
    await until(async () => (await throttle.callbacks.attempts('jhang')).length === 1, 10_000, 'the timeout record');
    expect(await throttle.callbacks.attempts('jhang')).toMatchObject([{ delivered: false, error: 'no answer within 1500 ms' }]);
    // The same job and outcome queued again is one delivery.
    await throttle.callbacks.enqueue('jgood', 'completed', good.url, true, '{"b":2}');
    await new Promise((r) => setTimeout(r, 300));
    expect(good.got.length).toBe(1);
    await throttle.callbacks.close();
  });

  it('a loopback address is refused at delivery unless its host was listed exactly (recorded, not sent)', async () => {
    const throttle = ctx.sluice.throttle('cbq2', { ratePerSecond: 10, capacity: 5 });
    const r = await receiver(false);
    throttle.callbacks.start('secret', { timeoutMs: 1_000 });
    await throttle.callbacks.enqueue('jpriv', 'failed', r.url, false, '{}');
    await until(async () => (await throttle.callbacks.attempts('jpriv')).length === 1, 10_000, 'the refused attempt');
    expect(await throttle.callbacks.attempts('jpriv')).toMatchObject([
      { delivered: false, error: "refused: host '127.0.0.1' resolves to 127.0.0.1, a loopback address (list the host exactly in callbacks.allow to allow it)" },
    ]);
    expect(r.got).toEqual([]);
    await throttle.callbacks.close();
  });
});
