// The worker side of `sluice worker` / `sluice dev`: one BullMQ-backed throttle worker per queue of the
// rules file, each running its queue's handler. Imports only sluice's public API.
import type { QueueRule, RunWorkers, RunWorkersOptions, RunningWorkers, Sluice, ThrottleWorker } from '../src/index.js';
import { httpHandler } from './handlers/http.js';
import { moduleHandler } from './handlers/module.js';

export type { RunWorkersOptions, RunningWorkers };

/** Typed by the one declaration the CLI loads it by (src/workers-entry.ts). */
export const runWorkers: RunWorkers = async (sluice: Sluice, queues: readonly QueueRule[], options: RunWorkersOptions = {}): Promise<RunningWorkers> => {
  const { only, ...workerOptions } = options;
  const chosen = queues.filter((q) => !only || only.includes(q.name));
  const workers: ThrottleWorker[] = [];
  try {
    for (const queue of chosen) {
      sluice.throttle(queue.name, queue.throttle);
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
};
