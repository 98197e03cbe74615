// The worker side of `sluice worker` / `sluice dev`: one BullMQ-backed throttle worker per queue of the
// rules file, each running its queue's handler. Imports only sluice's public API.
import type { Sluice, ThrottleWorker, ThrottleWorkerOptions } from '../src/index.js';
import { httpHandler, type HttpUpstream } from './handlers/http.js';
import { moduleHandler, type ModuleHandlerSpec } from './handlers/module.js';

/** A queue as the rules file gives it (structurally: what this module needs of a QueueRule). */
export interface WorkerQueue {
  name: string;
  throttle: Record<string, unknown> & { ratePerSecond: number; capacity: number };
  handler: ({ type: 'http' } & HttpUpstream) | ({ type: 'module' } & ModuleHandlerSpec);
}

export interface RunWorkersOptions extends ThrottleWorkerOptions {
  /** Only these queues (default: all). */
  only?: readonly string[];
}

export interface RunningWorkers {
  queues: string[];
  /** Stops taking jobs, lets the running ones finish, and disconnects. */
  close(): Promise<void>;
}

export async function runWorkers(sluice: Sluice, queues: readonly WorkerQueue[], options: RunWorkersOptions = {}): Promise<RunningWorkers> {
  const { only, ...workerOptions } = options;
  const chosen = queues.filter((q) => !only || only.includes(q.name));
  const workers: ThrottleWorker[] = [];
  try {
    for (const queue of chosen) {
      sluice.throttle(queue.name, queue.throttle as never);
      const handler = queue.handler.type === 'http' ? httpHandler(queue.handler) : await moduleHandler(queue.handler);
      const worker = sluice.worker(queue.name, handler, workerOptions);
      workers.push(worker);
      await worker.waitUntilReady();
    }
  } catch (error) {
    await Promise.all(workers.map((w) => w.close()));
    throw error;
  }
  return {
    queues: chosen.map((q) => q.name),
    close: async () => {
      await Promise.all(workers.map((w) => w.close()));
    },
  };
}
