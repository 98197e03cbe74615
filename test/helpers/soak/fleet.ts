// The soak's worker processes (test/helpers/throttle-proc.ts, each a sluice worker reporting every
// handler start): started together, one SIGKILLed mid-job and replaced, all closed at the end.
import type { ThrottleConfigInput } from '../../../src/index.js';
import { ThrottleProc } from '../throttle-procs.js';
import { sleep, wallMs, type KillRecord, type Log, type StartEvent } from './records.js';

// A short lock: a killed worker's job is found stalled and run again within the run (BullMQ's 30 s
// default would outlast the drain).
const WORKER_OPTIONS = { lockDurationMs: 3_000, stalledIntervalMs: 3_000 };
/** A close that takes longer (a handler stuck, Redis gone) ends in SIGKILL: the run must end. */
const CLOSE_TIMEOUT_MS = 10_000;
/** Between the kill and the replacement: the killed process's jobs are left to stalled-job recovery first. */
const REPLACE_AFTER_MS = 1_000;

export interface FleetOptions {
  redisUrl: string;
  prefix: string;
  name: string;
  config: ThrottleConfigInput;
  concurrency: number;
  handlerMs: number;
}

export class WorkerFleet {
  private readonly procs: ThrottleProc[] = [];

  constructor(private readonly options: FleetOptions) {}

  /** Starts `count` worker processes (together) and waits until each worker is ready. */
  async start(count: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => this.add()));
  }

  private async add(): Promise<ThrottleProc> {
    const o = this.options;
    const proc = await ThrottleProc.start({ target: o.redisUrl } as never, o.prefix, o.name, o.config, WORKER_OPTIONS);
    this.procs.push(proc);
    await proc.worker(o.concurrency, { durationMs: o.handlerMs });
    return proc;
  }

  get pids(): number[] {
    return this.procs.map((p) => p.handle.child.pid!);
  }

  /** Every start reported so far, by every process (a killed one's included). */
  starts(): StartEvent[] {
    return this.procs.flatMap((p) => p.starts);
  }

  startCount(): number {
    return this.procs.reduce((n, p) => n + p.starts.length, 0);
  }

  /** What the processes' BullMQ Workers gave up on (a completion, a lock renewal...). */
  bullErrors(): string[] {
    return this.procs.flatMap((p) => p.bullErrors);
  }

  /**
   * SIGKILLs the first process right after it reported a start (a handler mid-job, other jobs held for
   * their instant: the cases stalled-job recovery and lane repair exist for), then starts a replacement.
   */
  async killOneMidJob(log: Log): Promise<KillRecord> {
    const victim = this.procs[0]!;
    const seen = victim.starts.length;
    const waitUntil = wallMs() + 3_000;
    while (victim.starts.length === seen && wallMs() < waitUntil) await sleep(1);
    const kill: KillRecord = { pid: victim.handle.child.pid!, at: wallMs() };
    log(`SIGKILL worker pid ${kill.pid}`);
    await victim.kill();
    await sleep(REPLACE_AFTER_MS);
    const replacement = await this.add();
    kill.replacementPid = replacement.handle.child.pid!;
    log(`replacement worker pid ${kill.replacementPid} ready`);
    return kill;
  }

  /** Closes every live process; one that does not close in time is killed. */
  async close(): Promise<void> {
    await Promise.all(
      this.procs
        .filter((p) => p.handle.child.exitCode === null && p.handle.child.signalCode === null)
        .map((p) => Promise.race([p.close(), sleep(CLOSE_TIMEOUT_MS).then(() => p.kill())]).catch(() => p.kill())),
    );
  }
}
