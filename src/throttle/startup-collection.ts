// A fresh Node process's first young-generation collections promote the objects made while it started
// (modules, compiled code, connections) and take 26-37 ms each on a 2-core machine: traced in a burst of
// jobs onto workers started just before it (docs/algorithms.md, "The first second"). In a worker they
// fall into its first jobs, whose start calls and timers wait meanwhile, and the jobs due then start
// late and go back to their lanes. Two collections as soon as the worker has started (connected, its
// dispatch loop just set going), ~30-60 ms once, promote those objects before the jobs flow: the first
// second of a burst onto just-started workers went from 168-177 to 179-185 starts of 200 in three
// alternated runs (bench/global-cap.ts --collect-at-start).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

type Collect = (options?: { type?: 'major' | 'minor' }) => void;

let done = false;

/**
 * Runs two young-generation collections, once per process. Returns how long they took (ms), or
 * undefined when they ran already or the runtime offers no collection. `gc` exists only under
 * --expose-gc: the flag set now makes it appear in a new context (the main one is left as it was).
 */
export function collectStartupGarbage(): number | undefined {
  if (done) return undefined;
  done = true;
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as Collect | undefined;
    if (typeof gc !== 'function') return undefined;
    const started = performance.now();
    // Objects that survive one collection are promoted by the next.
    gc({ type: 'minor' });
    gc({ type: 'minor' });
    return performance.now() - started;
  } catch {
    return undefined;
  }
}
