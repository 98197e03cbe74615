// Deadlines around Redis calls: a decision must return within its policy's timeout even when Redis is
// slow or a packet is lost, whatever ioredis does with the command afterwards.
//
// Every call of one length (a policy's timeoutMs) gets its deadline in arrival order, so the calls of
// one length form a FIFO: a linked list with one timer armed for its head. A call that settles unlinks
// itself (O(1), and the entry dies young), so a busy process holds one timer per distinct length instead
// of creating and clearing one per call. Expiry happens at the same instant a per-call setTimeout would
// have fired (docs/decisions/shared-deadline-timer.md).
import { SluiceError } from '../errors.js';

/**
 * Node's timers fire relative to the event loop's cached clock, which can lag `performance.now()` by a
 * fraction of a millisecond: a deadline this close to now is due, as it would be for setTimeout.
 */
const DUE_SLACK_MS = 1;

/**
 * One call under a deadline. Subclasses hold what the call needs (so the hot path allocates one
 * object, not a timer and a handful of closures) and say what happens when time runs out.
 */
export abstract class Deadline {
  /** @internal list links, owned by the list while the deadline runs */
  prev: Deadline | undefined = undefined;
  next: Deadline | undefined = undefined;
  list: DeadlineList | undefined = undefined;
  at = 0;

  /** Runs once, when the deadline passes before `settle()` was called. */
  protected abstract expire(): void;

  /** Starts the deadline: `expire()` runs after `ms` unless `settle()` comes first. */
  protected start(ms: number): void {
    let list = lists.get(ms);
    if (!list) {
      list = new DeadlineList(ms);
      lists.set(ms, list);
    }
    list.add(this);
  }

  /** True while the deadline runs: neither expired nor settled. */
  get pending(): boolean {
    return this.list !== undefined;
  }

  /** Stops the deadline. True for the first caller only; false once it has expired (or was settled). */
  settle(): boolean {
    const list = this.list;
    if (!list) return false;
    list.unlink(this);
    return true;
  }

  /** @internal */
  runExpire(): void {
    this.expire();
  }
}

class DeadlineList {
  private head: Deadline | undefined;
  private tail: Deadline | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** `fire` is expiring entries: one it runs may start a call, whose add must not arm a timer past the head's deadline. */
  private firing = false;

  constructor(private readonly ms: number) {}

  add(entry: Deadline): void {
    entry.list = this;
    entry.at = performance.now() + this.ms;
    if (this.tail) {
      entry.prev = this.tail;
      this.tail.next = entry;
      this.tail = entry;
    } else {
      this.head = this.tail = entry;
    }
    // An armed timer is due no later than this entry (every entry of the list has the same length): it
    // stays; it only has to keep the process alive again if it was let go when the list ran empty.
    if (!this.timer) {
      if (!this.firing) this.arm(this.ms);
    } else if (!this.head!.next) this.timer.ref();
  }

  unlink(entry: Deadline): void {
    const { prev, next } = entry;
    if (prev) prev.next = next;
    else this.head = next;
    if (next) next.prev = prev;
    else this.tail = prev;
    entry.prev = entry.next = entry.list = undefined;
    // Nothing left to watch: the timer no longer keeps the process alive, but stays armed. Clearing it
    // and arming a new one for the next call was, at one call in flight, a timer insert and removal per
    // call; now a quiet list's timer fires once, finds nothing, and is not armed again.
    if (!this.head && this.timer) this.timer.unref();
  }

  private arm(delayMs: number): void {
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(delayMs)));
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    const due = performance.now() + DUE_SLACK_MS;
    // Expire every due entry; each runs after it is unlinked, so it may start new calls.
    this.firing = true;
    try {
      for (let e = this.head; e && e.at <= due; e = this.head) {
        this.unlink(e);
        e.runExpire();
      }
    } finally {
      this.firing = false;
    }
    // The timer may have been armed for an entry that settled: the head's deadline is later, look again then.
    if (this.head) this.arm(this.head.at - performance.now());
  };
}

const lists = new Map<number, DeadlineList>();

/** The error a call that ran past its deadline ends with. */
export function deadlineError(what: string, ms: number): SluiceError {
  return new SluiceError('SLUICE_ERR_REDIS_UNAVAILABLE', `${what}: no answer from Redis within ${ms} ms`);
}

/** withDeadline's call: settles its promise with the work's outcome, or with the deadline error. */
class DeadlineCall<T> extends Deadline {
  constructor(
    private readonly ms: number,
    private readonly what: string,
    private readonly resolve: (value: T) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    super();
    this.start(ms);
  }

  protected expire(): void {
    this.reject(deadlineError(this.what, this.ms));
  }

  done(value: T): void {
    if (this.settle()) this.resolve(value);
  }

  fail(error: unknown): void {
    if (this.settle()) this.reject(error);
  }
}

/** Resolves or rejects like `work()`, or rejects with SLUICE_ERR_REDIS_UNAVAILABLE after `ms`. */
export function withDeadline<T>(work: () => Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const call = new DeadlineCall<T>(ms, what, resolve, reject);
    try {
      work().then(
        (value) => call.done(value),
        (error: unknown) => call.fail(error),
      );
    } catch (error) {
      call.fail(error);
    }
  });
}
