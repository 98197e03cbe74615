// How many jobs a worker process takes from BullMQ at once: its handlers only, or its handlers and the
// jobs it may hold for their start instants (`holdCapacity`).
//
// Why: a job is handed out with its start instant, up to the throttle's lead before it, and the process
// that takes it waits for that instant. Holding many ahead is what lets a few handlers keep up with a fast
// lane (at 2,000/s a horizon holds ~50 starts). But when the handlers are what limits the process (they
// run longer than the lane's interval times their number), a job held here meets its instant with every
// handler busy: it is late, and takes a fresh start behind the lane's jobs that another process holds,
// which then start first (two processes, one handler each, 30 ms handlers on a 100/s lane: 20 of 60 starts
// out of the lane's order). Taking no more than the handlers leaves those jobs in BullMQ's wait list, in
// the lane's order, for the first process with a free handler; one that reaches it past its start is late
// at its first gate call, when its successors are still at no worker, so they move with it
// (lua/throttle-start.lua movable_later) and the lane keeps its order.
//
// So the process takes only as many jobs as it has handlers (strict) from its start and whenever a job
// comes to its start with no handler free and waits for one past the lateness tolerance (saturated: the
// handlers made it late; at 2,000/s more jobs than handlers fall due at once, and fast handlers free
// their slots within microseconds). It goes back to holding when the limit binds while
// the handlers are far from busy, by two measures since it last looked (once a few handlers have ended): they
// ran less than half the time it had jobs, and the jobs it took per ms, times a handler's mean run, would
// keep them busy less than half the time. Then what fills the limit is jobs waiting for their instants,
// not handlers, and holding only as many as the handlers would cap the process's rate at handlers / lead.
// Each measure alone misread a process whose handlers are the bottleneck: the busy share is low at every
// start (the first jobs wait for their instants, no handler runs yet), and the jobs taken per ms are few
// right after a saturation (strict holds them back).

/** The handlers' busy share (measured, and predicted from the jobs taken) under which a binding strict limit is lifted. */
const RELAX_BELOW_BUSY = 0.5;
/** The shortest span the busy share is read over (ms of having jobs). */
const MIN_SPAN_MS = 20;
/**
 * The fewest handler runs ended in that span: jobs that come late and go back to their lane run no
 * handler, and a process whose every job did so looked idle.
 */
const MIN_ENDS = 4;
/** The span is restarted after this long (ms), so that the busy share is recent. */
const MAX_SPAN_MS = 250;

export class HoldPolicy {
  private strict = true;
  /** Handlers running now. */
  private running = 0;
  /** Jobs taken and not finished. */
  private outstanding = 0;
  /** Since the span began, up to `at`: handler-milliseconds run, and milliseconds with jobs taken. */
  private busyMs = 0;
  private activeMs = 0;
  /** Since the span began: jobs taken, and handlers ended. */
  private takes = 0;
  private ends = 0;
  private at: number;

  /**
   * `apply` is called with the number of jobs the process may take whenever it changes (and once now);
   * `now` is the clock (ms), for tests.
   */
  constructor(
    readonly handlers: number,
    readonly holdCapacity: number,
    private readonly apply: (limit: number) => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.at = now();
    apply(this.limit);
  }

  /** True while it takes no more jobs than it has handlers. */
  get isStrict(): boolean {
    return this.strict;
  }

  /** The jobs the process may have taken and not finished. */
  get limit(): number {
    return this.strict ? this.handlers : this.handlers + this.holdCapacity;
  }

  /** A handler began (its slot taken). */
  handlerStarted(): void {
    this.advance();
    this.running++;
  }

  /** A handler ended (its slot freed). */
  handlerEnded(): void {
    this.advance();
    this.running = Math.max(0, this.running - 1);
    this.ends++;
  }

  /** A job came to its start instant with no handler free, and waited for one past its lateness tolerance. */
  saturated(): void {
    this.advance();
    this.restartSpan();
    if (!this.strict) this.set(true);
  }

  /**
   * A job was taken. When the jobs taken and not finished fill a strict limit while the handlers are far
   * from busy (both measures under half), holding resumes.
   */
  taken(): void {
    this.advance();
    this.outstanding++;
    this.takes++;
    if (!this.strict || this.outstanding < this.handlers || this.activeMs < MIN_SPAN_MS || this.ends < MIN_ENDS) return;
    const busyShare = this.busyMs / (this.activeMs * this.handlers);
    const takenShare = ((this.takes / this.activeMs) * (this.busyMs / this.ends)) / this.handlers;
    if (busyShare < RELAX_BELOW_BUSY && takenShare < RELAX_BELOW_BUSY) this.set(false);
    if (this.activeMs >= MAX_SPAN_MS || !this.strict) this.restartSpan();
  }

  /** A job taken is finished (started and done, or sent back). */
  finished(): void {
    this.advance();
    this.outstanding = Math.max(0, this.outstanding - 1);
  }

  private advance(): void {
    const t = this.now();
    this.busyMs += this.running * (t - this.at);
    if (this.outstanding > 0) this.activeMs += t - this.at;
    this.at = t;
  }

  private restartSpan(): void {
    this.busyMs = 0;
    this.activeMs = 0;
    this.takes = 0;
    this.ends = 0;
  }

  private set(strict: boolean): void {
    this.strict = strict;
    this.apply(this.limit);
  }
}
