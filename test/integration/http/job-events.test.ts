// The SSE stream's bound and the shutdown of open waits, in-process (createApp on a real port, a real
// Redis and an in-process worker): a client that never reads is dropped once its socket has taken
// nothing for sseStallMs (counted), and LiveWaits.abortAll() — what `sluice serve` calls at shutdown —
// answers every long-poll at once and ends every stream.
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Metrics, parseRules, type Sluice, type ThrottledJob } from '../../../src/index.js';
import { createApp } from '../../../src/express.js';
import type { LiveWaits } from '../../../src/http/live/live-waits.js';
import { startBackend, type Backend } from '../../helpers/fixtures.js';
import { pollUntil, sampleValue, parseMetrics } from '../../helpers/e2e.js';

const RULES = `queues:
  - name: work
    rate_per_second: 50
    capacity: 10
    key: body
    handler: { type: module, path: ./unused.mjs }
  - name: idle
    rate_per_second: 0.01
    capacity: 5
    key: body
    handler: { type: module, path: ./unused.mjs }
`;

let backend: Backend;
let sluice: Sluice;
let server: Server;
let base: string;
let metrics: Metrics;
let waits: LiveWaits;

beforeAll(async () => {
  backend = await startBackend('single');
  sluice = backend.sluice();
  const rules = parseRules(RULES, { filename: 'rules.yaml' });
  metrics = new Metrics();
  const app = createApp({ sluice, rules: { current: () => rules }, metrics, logger: pino({ level: 'silent' }), sseStallMs: 300 });
  waits = app.locals.liveWaits as LiveWaits;
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  sluice.worker(
    'work',
    async (job: ThrottledJob<{ spam: number; size: number; hold: number }>) => {
      const pad = 'x'.repeat(job.data.size);
      for (let i = 0; i < job.data.spam; i++) await job.progress({ i, pad });
      await new Promise((resolve) => setTimeout(resolve, job.data.hold));
      return 'done';
    },
    { config: rules.queue('work')!.throttle },
  );
});
afterAll(async () => {
  server?.closeAllConnections();
  server?.close();
  await backend?.dispose();
});

const value = async (name: string, labels: Record<string, string> = {}) => sampleValue(parseMetrics(await metrics.text()), name, labels);
async function submit(queue: string, payload: unknown): Promise<string> {
  const res = await fetch(`${base}/v1/queues/${queue}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key: 'k', payload }) });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

describe('a client that never reads', () => {
  it('is dropped once its socket has taken nothing for sseStallMs, and counted; the job is unaffected', async () => {
    // ~10 MB of progress, then the job holds 3 s: the stall (300 ms) is seen while it runs.
    const id = await submit('work', { spam: 600, size: 16_000, hold: 3_000 });
    const stalled = connect(Number(new URL(base).port), '127.0.0.1');
    let closed = false;
    stalled.on('close', () => (closed = true));
    stalled.on('error', () => undefined);
    stalled.write(`GET /v1/queues/work/jobs/${id}/events HTTP/1.1\r\nHost: x\r\n\r\n`);
    await pollUntil(() => value('sluice_job_event_streams_dropped_total'), (n) => n === 1, 20_000, 50, 'the stalled stream to be dropped');
    // Reading now drains what the kernel held: then the end the server sent arrives (a paused socket never sees it).
    stalled.resume();
    await pollUntil(async () => closed, (c) => c, 5_000, 50, 'the server to close the socket');
    expect(await value('sluice_job_waits_open', { kind: 'sse' })).toBe(0);
    const done = await fetch(`${base}/v1/queues/work/jobs/${id}?wait=20`);
    expect(((await done.json()) as { state: string; result: unknown })).toMatchObject({ state: 'completed', result: 'done' });
  });
});

describe('shutdown', () => {
  it('abortAll() answers a long-poll with the job as it is and ends an SSE stream', async () => {
    const id = await submit('idle', 1);
    const poll = fetch(`${base}/v1/queues/idle/jobs/${id}?wait=30`);
    const stream = fetch(`${base}/v1/queues/idle/jobs/${id}/events`).then((r) => r.text());
    await pollUntil(async () => (await value('sluice_job_waits_open', { kind: 'long_poll' })) + (await value('sluice_job_waits_open', { kind: 'sse' })), (n) => n === 2, 10_000, 20, 'both waits');
    expect(waits.size).toBe(2);
    waits.abortAll();
    const answer = await poll;
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { id: string; state: string })).toMatchObject({ id, state: 'queued' });
    const text = await stream;
    expect(text.startsWith('retry: 3000\n\nevent: state\n')).toBe(true);
    expect(text.match(/^event: /gm)).toEqual(['event: ']);
    expect(waits.size).toBe(0);
  });
});
