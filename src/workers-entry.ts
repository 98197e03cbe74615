// The one declaration of the worker process entry (workers/run.ts), which the CLI loads at run time:
// workers/run.ts is typed by it, and loadWorkersEntry() is the only place the CLI reaches it.
// src/ never imports workers/ statically (docs/decisions/workers-loaded-at-run-time.md).
import type { QueueRule } from './rules/queues.js';
import type { Sluice } from './sluice.js';
import type { ThrottleWorkerOptions } from './throttle/worker.js';

export interface RunWorkersOptions extends ThrottleWorkerOptions {
  /** Only these queues (default: all). */
  only?: readonly string[];
}

export interface RunningWorkers {
  queues: string[];
  /** Stops taking jobs, lets the running ones finish, and disconnects. */
  close(): Promise<void>;
}

/** Starts one throttle worker per queue of the rules file, each running its queue's handler. */
export type RunWorkers = (sluice: Sluice, queues: readonly QueueRule[], options?: RunWorkersOptions) => Promise<RunningWorkers>;

/** What workers/run.ts exports. */
export interface WorkersEntry {
  runWorkers: RunWorkers;
}

/**
 * Loads workers/run.js relative to this file (dist/workers/run.js in a build, workers/run.ts under
 * tsx). The path is computed so that the build never follows it from src/.
 */
export async function loadWorkersEntry(): Promise<WorkersEntry> {
  const mod = (await import(new URL('../workers/run.js', import.meta.url).href)) as Partial<WorkersEntry>;
  if (typeof mod.runWorkers !== 'function') throw new TypeError('workers/run.js does not export runWorkers');
  return mod as WorkersEntry;
}
