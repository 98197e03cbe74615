// Starting and driving throttle child processes (see throttle-proc.ts) from a test.
import type { ThrottleConfigInput } from '../../src/index.js';
import { maxInWindow as maxInSortedWindow } from './throttle-stats.js';
import type { Backend } from './fixtures.js';
import { startTsProcess, type ChildHandle } from './processes.js';

export interface StartEvent {
  id: string;
  lane: string;
  cost: number;
  /** Wall-clock ms (performance.timeOrigin + now) when the handler started. */
  t: number;
  slot: number;
  attempt: number;
  tag?: string;
  pid: number;
}

export class ThrottleProc {
  readonly starts: StartEvent[] = [];
  /** Errors the worker's BullMQ Worker emitted (a command it gave up on: a job's completion, a lock renewal...). */
  readonly bullErrors: string[] = [];
  private constructor(readonly handle: ChildHandle) {}

  /** @param env extra environment of the child (e.g. a preloaded clock skew). */
  static async start(backend: Backend, prefix: string, name: string, config: ThrottleConfigInput, workerOptions: object = {}, env: Record<string, string> = {}) {
    const handle = startTsProcess('helpers/throttle-proc.ts', [JSON.stringify(backend.target), prefix, name, JSON.stringify(config), JSON.stringify(workerOptions)], env);
    const proc = new ThrottleProc(handle);
    // Whole lines only: a line split across two chunks is read once it is complete.
    let buffer = '';
    handle.child.stdout!.on('data', (chunk: Buffer) => {
      const lines = (buffer + chunk.toString()).split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        if (line.startsWith('{"type":"start"')) proc.starts.push(JSON.parse(line) as StartEvent);
        else if (line.startsWith('{"type":"bull-error"')) proc.bullErrors.push((JSON.parse(line) as { message: string }).message);
      }
    });
    await handle.message('ready');
    return proc;
  }

  async worker(concurrency = 10, behaviour: object = {}) {
    this.handle.send(JSON.stringify({ cmd: 'worker', concurrency, behaviour }));
    await this.handle.message('worker-ready');
  }

  async submit(items: { key: string; payload: unknown; cost?: number; id?: string; nowMs?: number }[]) {
    this.handle.send(JSON.stringify({ cmd: 'submit', items }));
    const r = await this.handle.message<{ results: SubmitReply[] }>('submitted');
    return r.results;
  }

  /** As submit, but a submit that throws is answered `{ error, code }` in its place (the others still count). */
  async submitSettled(items: { key: string; payload: unknown; cost?: number; id?: string; nowMs?: number }[]) {
    this.handle.send(JSON.stringify({ cmd: 'submit', items, settle: true }));
    const r = await this.handle.message<{ results: (SubmitReply | { error: string; code?: string })[] }>('submitted');
    return r.results;
  }

  async close() {
    if (this.handle.child.exitCode !== null) return;
    this.handle.send(JSON.stringify({ cmd: 'close' }));
    await this.handle.exited;
  }

  kill() {
    this.handle.child.kill('SIGKILL');
    return this.handle.exited;
  }
}

export type SubmitReply =
  | { admitted: true; jobId: string; startsAtMs: number; position: number; duplicate?: boolean }
  | { admitted: false; reason: string; retryAfterMs: number; capacity: number };

/** The largest number of events inside any half-open window [t, t + windowMs), in any order. */
export function maxInWindow(times: number[], windowMs: number): number {
  return maxInSortedWindow([...times].sort((a, b) => a - b), windowMs);
}

/** Jain's fairness index of a list of throughputs: 1 = perfectly even, 1/n = one takes all. */
export function jain(xs: number[]): number {
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return (sum * sum) / (xs.length * squares);
}

/** Resolves once `check` is true, polling; rejects after `timeoutMs`. */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
