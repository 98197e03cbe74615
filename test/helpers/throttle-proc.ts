// A child process that plays a throttle producer and/or worker, driven by JSON lines on stdin and
// reporting on stdout (one JSON message per line). Used by the multi-process throttle tests.
// argv: <redis target JSON> <prefix> <throttle name> <throttle config JSON> <worker options JSON>
import { exitWhenFlushed } from './child-exit.js';
import { createInterface } from 'node:readline';
import { createSluice, DeferJob } from '../../src/index.js';

const [target, prefix, name, configJson, workerOptionsJson] = process.argv.slice(2);
const sluice = createSluice({ redis: JSON.parse(target!), prefix: prefix! });
const throttle = sluice.throttle(name!, JSON.parse(configJson!));
// With REPORT_MS (environment THROTTLE_PROC_REPORT_MS, a bench sets it), per-job lines (start, sent) are
// written in one pipe write every REPORT_MS, not one each: a write to a pipe is a synchronous syscall
// here, and at thousands of starts a second those writes (and the parent's reads) took CPU from the run
// being measured. The instants in them are taken when the line is made, so only their arrival moves. Off
// by default: a test that SIGKILLs a worker must see every start it made. Any other message writes what
// is pending first, in order.
const REPORT_MS = Number(process.env.THROTTLE_PROC_REPORT_MS ?? 0);
let pendingLines = '';
let reportTimer: NodeJS.Timeout | undefined;
const flush = () => {
  if (reportTimer) clearTimeout(reportTimer);
  reportTimer = undefined;
  if (pendingLines === '') return;
  process.stdout.write(pendingLines);
  pendingLines = '';
};
const send = (msg: object) => {
  pendingLines += JSON.stringify(msg) + '\n';
  flush();
};
/** A per-job line: sent within REPORT_MS, with the others of that moment. */
const report = (msg: object) => {
  pendingLines += JSON.stringify(msg) + '\n';
  if (REPORT_MS > 0) reportTimer ??= setTimeout(flush, REPORT_MS);
  else flush();
};

interface Behaviour {
  /** Job payloads with `hang: true` never finish in this process (so it can be killed mid-job). */
  hang?: boolean;
  /** Payload field `failTimes`: throw on the first N attempts. Payload `deferMs`: DeferJob on the first attempt. */
  durationMs?: number;
  /**
   * Each job calls this upstream (POST), after preparing for a random 0 to `prepareMaxMs` ms, checking
   * `job.assertOnTime()` right before sending; an answer other than 2xx fails the job.
   */
  call?: { url: string; prepareMaxMs: number };
}

async function startWorker(concurrency: number, behaviour: Behaviour) {
  const worker = sluice.worker(
    name!,
    async (job) => {
      const t = performance.timeOrigin + performance.now();
      const data = job.data as { tag?: string; hang?: boolean; failTimes?: number; deferMs?: number };
      report({ type: 'start', id: job.id, lane: job.lane, cost: job.cost, t, slot: job.slotMs, attempt: job.attemptsMade, tag: data?.tag, pid: process.pid });
      if (data?.hang && behaviour.hang) await new Promise(() => undefined);
      if (data?.deferMs && job.attemptsMade === 0 && !(job.raw.data as { deferred?: boolean }).deferred) {
        await job.raw.updateData({ ...job.raw.data, deferred: true } as never);
        throw new DeferJob(data.deferMs);
      }
      if (data?.failTimes && job.attemptsMade < data.failTimes) throw new Error(`planned failure ${job.attemptsMade + 1}`);
      if (behaviour.durationMs) await new Promise((r) => setTimeout(r, behaviour.durationMs));
      if (behaviour.call) {
        await new Promise((r) => setTimeout(r, Math.random() * behaviour.call!.prepareMaxMs));
        job.assertOnTime();
        report({ type: 'sent', id: job.id, t: performance.timeOrigin + performance.now(), pid: process.pid });
        const res = await fetch(behaviour.call.url, { method: 'POST', body: '{}' });
        await res.body?.cancel();
        if (res.status >= 300) throw new Error(`upstream answered ${res.status}`);
      }
      return { done: data?.tag ?? job.id, pid: process.pid };
    },
    { concurrency, ...JSON.parse(workerOptionsJson || '{}') },
  );
  await worker.waitUntilReady();
  // What BullMQ's Worker gave up on (sluice keeps it quiet: reconnects are BullMQ's job): reported, so a
  // test can say that no job's completion, park or lock renewal failed. Not public API: the field is private.
  const bulls = (worker as unknown as { workers: import('bullmq').Worker[] }).workers;
  for (const bull of bulls) bull.on('error', (e: Error) => send({ type: 'bull-error', message: String(e?.message).slice(0, 300) }));
  return worker;
}

let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
const rl = createInterface({ input: process.stdin });
send({ type: 'ready' });
for await (const line of rl) {
  const msg = JSON.parse(line) as { cmd: string; [k: string]: unknown };
  try {
    if (msg.cmd === 'worker') {
      worker = await startWorker(Number(msg.concurrency ?? 10), (msg.behaviour as Behaviour) ?? {});
      send({ type: 'worker-ready' });
    } else if (msg.cmd === 'submit') {
      // Several keys/payloads at once, all in flight together.
      const items = msg.items as { key: string; payload: unknown; cost?: number; id?: string; nowMs?: number }[];
      const one = (i: (typeof items)[number]) =>
        throttle.submit(i.key, i.payload, {
          ...(i.cost !== undefined ? { cost: i.cost } : {}),
          ...(i.id !== undefined ? { id: i.id } : {}),
          ...(i.nowMs !== undefined ? { nowMs: i.nowMs } : {}),
        });
      // `settle`: a submit that throws is answered `{ error, code }` in its place instead of failing the batch.
      const results = msg.settle
        ? await Promise.all(items.map((i) => one(i).catch((e: Error & { code?: string }) => ({ error: e.message.slice(0, 200), code: e.code }))))
        : await Promise.all(items.map(one));
      send({ type: 'submitted', results });
    } else if (msg.cmd === 'close') {
      await worker?.close();
      await sluice.close();
      send({ type: 'closed' });
      exitWhenFlushed(0);
    }
  } catch (error) {
    send({ type: 'error', message: (error as Error).message });
  }
}
