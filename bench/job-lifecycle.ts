// Following jobs over HTTP with real `sluice serve` and `sluice worker` processes on a private
// redis-server: (1) long-poll wake-up latency — from the handler's return (its own Date.now(), in the
// result) to the long-poll's answer arriving at the client; (2) the same for an SSE stream's
// `completed` event; (2b) the same for a signed callback POST reaching a receiver; (3) the serve process's resident memory while a job reports ~32 MB of progress,
// with no stream open and then with 20 SSE clients that never read (sampled from its /metrics).
//   npx tsx bench/job-lifecycle.ts [--jobs 60] [--stalled 20]
// Prints one JSON document on stdout; progress on stderr.
import { createServer } from 'node:http';
import { connect, type Socket } from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { pollUntil, sampleValue, scrape, startSluice, stopAll, tempDir } from '../test/helpers/e2e.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({ options: { jobs: { type: 'string', default: '60' }, stalled: { type: 'string', default: '20' } } });
const JOBS = Number(flags.jobs);
const STALLED = Number(flags.stalled);
const log = (m: string) => process.stderr.write(`${m}\n`);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const r1 = (x: number) => Math.round(x * 10) / 10;
const summary = (xs: number[]) => ({ n: xs.length, p50: r1(pct(xs, 50)), p99: r1(pct(xs, 99)), max: r1(Math.max(...xs)) });

const HANDLER = `export default async (job) => {
  const p = job.data || {};
  if (p.spam) { const pad = 'x'.repeat(p.size); for (let i = 0; i < p.spam; i++) await job.progress({ i, pad }); }
  if (p.hold) await new Promise((r) => setTimeout(r, p.hold));
  return { endAt: Date.now() };
};
`;
const RULES = `auth: none
callbacks:
  allow: ['127.0.0.1']
queues:
  - name: work
    rate_per_second: 200
    capacity: 100
    key: body
    handler: { type: module, path: ./run.mjs }
`;

const redis = await startRedis();
const dir = tempDir('bench-lifecycle');
dir.write('run.mjs', HANDLER);
const config = dir.write('rules.yaml', RULES);
const [serve, worker] = await Promise.all([startSluice('serve', { config, redisUrl: redis.url, readyTimeoutMs: 60_000 }), startSluice('worker', { config, redisUrl: redis.url, readyTimeoutMs: 60_000, env: { SLUICE_CALLBACK_SECRET: 'bench-secret' } })]);
const submit = async (lane: string, payload: unknown, extra: Record<string, unknown> = {}) => {
  const res = await fetch(`${serve.url}/v1/queues/work/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ key: lane, payload, ...extra }) });
  return ((await res.json()) as { id: string }).id;
};
const rss = async () => sampleValue(await scrape(serve.url), 'sluice_process_process_resident_memory_bytes');

try {
  // (1) long-poll: each job holds 200 ms, so the poll is open well before the job ends.
  const longPoll: number[] = [];
  for (let i = 0; i < JOBS; i++) {
    const id = await submit(`lp${i}`, { hold: 200 });
    const res = await fetch(`${serve.url}/v1/queues/work/jobs/${id}?wait=20`);
    const arrived = Date.now();
    const body = (await res.json()) as { state: string; result: { endAt: number } };
    if (body.state !== 'completed') throw new Error(`long-poll answered ${body.state}`);
    longPoll.push(arrived - body.result.endAt);
  }
  log(`long-poll ${JSON.stringify(summary(longPoll))}`);

  // (2) SSE: time from the handler's return to the `completed` event reaching the client.
  const sse: number[] = [];
  for (let i = 0; i < JOBS; i++) {
    const id = await submit(`sse${i}`, { hold: 200 });
    const res = await fetch(`${serve.url}/v1/queues/work/jobs/${id}/events`);
    const reader = res.body!.getReader();
    let text = '';
    let completedAt: number | undefined;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
      if (completedAt === undefined && text.includes('event: completed')) completedAt = Date.now();
    }
    const last = JSON.parse(text.trim().split('\n').at(-1)!.slice('data: '.length)) as { result: { endAt: number } };
    sse.push(completedAt! - last.result.endAt);
  }
  log(`sse ${JSON.stringify(summary(sse))}`);

  // (2b) callbacks: handler return -> the signed POST arriving at a receiver in this process.
  const arrivals = new Map<string, number>();
  const hook = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const sent = JSON.parse(body) as { job: { id: string; result: { endAt: number } } };
      arrivals.set(sent.job.id, Date.now() - sent.job.result.endAt);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));
  const hookUrl = `http://127.0.0.1:${(hook.address() as { port: number }).port}/hook`;
  const callbackIds: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    callbackIds.push(await submit(`cb${i}`, { hold: 50 }, { callback_url: hookUrl }));
    await new Promise((r) => setTimeout(r, 100));
  }
  await pollUntil(async () => arrivals.size, (n) => n === JOBS, 60_000, 100, 'every callback');
  const callbacks = callbackIds.map((id) => arrivals.get(id)!);
  hook.close();
  log(`callbacks ${JSON.stringify(summary(callbacks))}`);

  // (3) memory: a job reporting 2,000 progress values of 16 KB (~32 MB through the stream).
  async function spamPhase(stalledClients: number): Promise<Record<string, number>> {
    const before = await rss();
    const id = await submit(`spam${stalledClients}`, { spam: 2000, size: 16_000, hold: 1500 });
    const sockets: Socket[] = [];
    const url = new URL(serve.url);
    for (let i = 0; i < stalledClients; i++) {
      const s = connect(Number(url.port), url.hostname);
      s.on('error', () => undefined);
      s.write(`GET /v1/queues/work/jobs/${id}/events HTTP/1.1\r\nHost: x\r\n\r\n`);
      sockets.push(s);
    }
    let peak = before;
    let finished = false;
    const sampler = (async () => {
      while (!finished) {
        peak = Math.max(peak, await rss());
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    await fetch(`${serve.url}/v1/queues/work/jobs/${id}?wait=30`).then((r) => r.json());
    finished = true;
    await sampler;
    const samples = await scrape(serve.url);
    const open = sampleValue(samples, 'sluice_job_waits_open', { kind: 'sse' });
    const dropped = sampleValue(samples, 'sluice_job_event_streams_dropped_total');
    const after = await rss();
    for (const s of sockets) s.destroy();
    await pollUntil(async () => sampleValue(await scrape(serve.url), 'sluice_job_waits_open', { kind: 'sse' }), (n) => n === 0, 10_000, 100, 'streams to close');
    return { stalledClients, rssBeforeMiB: r1(before / 2 ** 20), rssPeakMiB: r1(peak / 2 ** 20), rssAfterMiB: r1(after / 2 ** 20), peakGrowthMiB: r1((peak - before) / 2 ** 20), streamsOpenAtEnd: open, streamsDroppedSoFar: dropped };
  }
  const memory = [await spamPhase(0), await spamPhase(STALLED)];
  log(`memory ${JSON.stringify(memory)}`);
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: 'job-lifecycle',
        date: new Date().toISOString(),
        machine: { cpus: os.cpus().length, node: process.version },
        longPollWakeUpMs: summary(longPoll),
        sseCompletedEventMs: summary(sse),
        callbackDeliveryMs: summary(callbacks),
        sseStalledClientsMemory: memory,
        note: 'latency: handler return (its Date.now()) to the answer / completed event / callback POST at the client; same machine. memory: serve RSS from its /metrics, sampled every 100 ms while the job reports ~32 MB of progress',
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await stopAll(serve, worker);
  await redis.dispose();
  dir.dispose();
}
