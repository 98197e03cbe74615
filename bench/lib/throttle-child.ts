// A throttle worker process for the throttle benches: runs sluice.worker(name) with a no-op handler and
// records, for every start, the wall-clock instant next to the slot the gate granted and the start the
// admission predicted. Driven by JSON lines on stdin, answers with one JSON line per command on stdout.
// argv: <redis url> <prefix> <throttle name> <throttle config JSON> <worker options JSON>
// commands: {cmd:'worker'} -> {type:'ready'} | {cmd:'count'} -> {type:'count', n}
//           {cmd:'report'} -> {type:'report', starts} | {cmd:'close'} -> {type:'closed'} then exit
import { createInterface } from 'node:readline';
import { createSluice, type ThrottleWorker } from '../../src/index.js';

const [url, prefix, name, configJson, workerOptionsJson] = process.argv.slice(2);
let deferrals = 0;
// Deferrals: the gate sent a job back to BullMQ's delayed set to wait for its slot (no attempt used).
// A cluster target comes as JSON ({"cluster": [...]}), a single node as its URL.
const sluice = createSluice({ redis: url!.startsWith('{') ? JSON.parse(url!) : url!, prefix: prefix!, observer: { onDecision: () => undefined, onDefer: () => void deferrals++ } });
const config = JSON.parse(configJson!);
const workerOptions = JSON.parse(workerOptionsJson || '{}') as {
  concurrency?: number;
  holdCapacity?: number;
  /** Handler duration (ms, default 0). */
  durationMs?: number;
  /**
   * Each handler waits a random 0 to this many ms (its call being prepared), then calls
   * `job.assertOnTime()` (a call later than the send headroom goes back to its lane) and records the
   * instant the call would leave; `count` then counts those sends (default: no send, count the starts).
   */
  sendWithinMs?: number;
  /** false: count starts only (a million starts would not fit in one report line). */
  record?: boolean;
};
const record = workerOptions.record ?? true;
const send = (msg: object) => process.stdout.write(JSON.stringify(msg) + '\n');
// Hard stop: a bench child never outlives its run.
setTimeout(() => process.exit(124), 15 * 60_000).unref();

/** One start: [wall ms, granted slot ms, admission's predicted start ms, lane, job id]. */
type Start = [number, number, number, string, string];
const starts: Start[] = [];
/** The instants the handlers' calls would leave (sendWithinMs), wall ms. */
const sends: number[] = [];
let count = 0;
let worker: ThrottleWorker | undefined;

async function startWorker(): Promise<void> {
  const durationMs = workerOptions.durationMs ?? 0;
  const sendWithinMs = workerOptions.sendWithinMs;
  worker = sluice.worker(
    name!,
    async (job) => {
      const t = performance.timeOrigin + performance.now();
      if (sendWithinMs === undefined) count++;
      if (record) starts.push([Math.round(t * 100) / 100, job.slotMs, (job.raw.data as { s: number }).s, job.lane, job.id]);
      if (sendWithinMs !== undefined) {
        await new Promise((r) => setTimeout(r, Math.random() * sendWithinMs));
        job.assertOnTime();
        sends.push(Math.round((performance.timeOrigin + performance.now()) * 100) / 100);
        count++;
      }
      if (durationMs > 0) await new Promise((r) => setTimeout(r, durationMs));
    },
    { config, concurrency: workerOptions.concurrency ?? 20, holdCapacity: workerOptions.holdCapacity ?? 300 },
  );
  await worker.waitUntilReady();
}

const rl = createInterface({ input: process.stdin });
send({ type: 'hello', pid: process.pid });
for await (const line of rl) {
  const msg = JSON.parse(line) as { cmd: string };
  if (msg.cmd === 'worker') {
    await startWorker();
    send({ type: 'ready' });
  } else if (msg.cmd === 'count') {
    send({ type: 'count', n: count });
  } else if (msg.cmd === 'report') {
    send({ type: 'report', pid: process.pid, deferrals, starts, sends });
  } else if (msg.cmd === 'close') {
    await worker?.close();
    await sluice.close();
    send({ type: 'closed' });
    process.exit(0);
  }
}
