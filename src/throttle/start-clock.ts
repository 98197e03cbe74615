// Waiting in-process for the start instants the gate gives, released in the order of the instants.
// A timer of its own per job fired by the event loop's cached clock and at millisecond steps: two jobs of
// a lane whose starts are microseconds apart (a fast lane, a burst) could wake in either order, by
// when each timer was set, and take the handler slot in that order. One timer per process instead, set
// for the earliest instant; when it fires every waiter due is released in instant order, so their
// continuations (the handler slot, the lateness check, the handler) run in the lane's order.

interface Waiter {
  readonly atMs: number;
  readonly seq: number;
  readonly resolve: () => void;
}

/** Min-heap of the waiters by instant, then by arrival. */
const heap: Waiter[] = [];
let seq = 0;
let timer: NodeJS.Timeout | undefined;
let timerAtMs = Infinity;
/** The release of waiters whose instant was past when they came (see untilStart). */
let immediate: NodeJS.Immediate | undefined;

const before = (a: Waiter, b: Waiter) => a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);

function push(w: Waiter): void {
  heap.push(w);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i]!, heap[parent]!)) break;
    [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
    i = parent;
  }
}

function pop(): Waiter {
  const top = heap[0]!;
  const last = heap.pop()!;
  if (heap.length > 0) {
    heap[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  }
  return top;
}

/** Releases every waiter due now, earliest instant first, and sets the timer for the next one. */
function release(): void {
  const now = performance.now();
  while (heap.length > 0 && heap[0]!.atMs <= now) pop().resolve();
  arm();
}

function arm(): void {
  if (heap.length === 0) return;
  const next = heap[0]!.atMs;
  if (timer !== undefined && timerAtMs <= next) return;
  if (timer !== undefined) clearTimeout(timer);
  timerAtMs = next;
  timer = setTimeout(
    () => {
      timer = undefined;
      timerAtMs = Infinity;
      release();
    },
    Math.max(0, next - performance.now()),
  );
}

/**
 * Resolves at `atMs` (this process's performance.now() ms), after every waiter with an earlier instant;
 * when it is past, at the end of this turn of the event loop (setImmediate), in order with the others due
 * then. Not at once: jobs that one reply moved (a late job of their lane and those it moved with it,
 * held-starts.ts) come here one after the other in the same turn, not in their order. A busy process
 * that read that reply after their new instants released each at once as it came, and a moved job took
 * the handler slot before the late job whose start is earlier (the lane's order broken; seen under load
 * in test/integration/throttle/slow-worker-fifo.test.ts).
 */
export function untilStart(atMs: number): Promise<void> {
  return new Promise((resolve) => {
    push({ atMs, seq: seq++, resolve });
    if (atMs <= performance.now()) {
      immediate ??= setImmediate(() => {
        immediate = undefined;
        release();
      });
    } else arm();
  });
}

/** Waiters not released yet (tests). @internal */
export function startWaiters(): number {
  return heap.length;
}
