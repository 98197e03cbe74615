// `sluice admin` against a real app (listening on a port, real Redis): tables by default, the API's
// JSON with --json, the token from SLUICE_ADMIN_TOKEN, a refusal as one line and exit code 1.
import type { Server } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../src/cli/program.js';
import { bufferIo } from '../../../src/cli/io.js';
import { Metrics, parseRules } from '../../../src/index.js';
import { createApp } from '../../../src/express.js';
import { useBackend } from '../../helpers/fixtures.js';

const TOKEN = 'cli-admin-token-0123456789';
const ctx = useBackend('single');
let server: Server;
let url: string;

beforeAll(async () => {
  const rules = parseRules(
    `auth: none
queues:
  - name: orders
    rate_per_second: 0.01
    capacity: 10
    handler: { type: module, path: ./none.mjs }
`,
    { filename: 'rules.yaml' },
  );
  const app = createApp({ sluice: ctx.sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }), adminToken: TOKEN });
  server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const a = server.address();
  url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
  const throttle = ctx.sluice.throttle('orders', rules.queue('orders')!.throttle);
  for (let i = 0; i < 3; i++) await throttle.submit('busy-key', i);
  await throttle.submit('other', 0);
});
afterAll(() => {
  server?.close();
});

async function admin(...args: string[]) {
  const io = bufferIo();
  const code = await runCli(['admin', ...args, '--url', url], io);
  return { code, out: io.stdout(), err: io.stderr() };
}

describe('sluice admin', () => {
  it('prints tables, or the JSON with --json', async () => {
    process.env.SLUICE_ADMIN_TOKEN = TOKEN;
    const queues = await admin('queues');
    expect(queues.code).toBe(0);
    expect(queues.out.split('\n')[0]).toMatch(/^QUEUE\s+RATE\s+CAPACITY\s+QUEUED/);
    expect(queues.out).toMatch(/orders\s+0\.01\s+10/);
    const lanes = await admin('lanes', 'orders', '--json');
    expect(JSON.parse(lanes.out)).toEqual({ queue: 'orders', total: 2, lanes: [{ lane: 'busy-key', depth: 3 }, { lane: 'other', depth: 1 }] });
    const set = await admin('override', 'orders', 'busy-key', '--capacity', '4');
    expect(set.code).toBe(0);
    expect(set.out).toMatch(/busy-key\s+-\s+4/);
    const listed = await admin('override', 'orders', '--json');
    expect(JSON.parse(listed.out).overrides[0]).toMatchObject({ lane: 'busy-key', capacity: 4 });
    const drain = await admin('drain', 'orders');
    expect(drain.out).toBe('queue orders: draining\n');
    expect((await admin('drain', 'orders', '--off')).out).toBe('queue orders: taking submits\n');
    const audit = await admin('audit', '--json');
    expect(JSON.parse(audit.out).entries.map((e: { action: string }) => e.action)).toEqual(['queue.undrain', 'queue.drain', 'override.set']);
  });

  it('prints a refusal as one line with exit code 1, and needs the token', async () => {
    process.env.SLUICE_ADMIN_TOKEN = TOKEN;
    const bad = await admin('override', 'orders', 'busy-key', '--rate', '-3');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/^400 invalid request body: ratePerSecond/);
    expect((await admin('lane', 'nope', 'x')).err).toMatch(/^404 no queue 'nope'/);
    process.env.SLUICE_ADMIN_TOKEN = 'wrong-token-wrong-token';
    expect((await admin('queues')).err).toMatch(/^401 not a valid admin token/);
    delete process.env.SLUICE_ADMIN_TOKEN;
    const none = await admin('queues');
    expect(none.code).toBe(1);
    expect(none.err).toMatch(/SLUICE_ADMIN_TOKEN is not set/);
  });
});
