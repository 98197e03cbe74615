// The jobs of each lane that this process holds between its first gate call and their start: asking for
// their start, then told it and waiting for it (start-clock.ts) or for a handler slot. A job found late
// names the lane's other jobs it holds in its late call (lua/throttle-start.lua movable_later), which
// moves those at or after its start with it when nothing else stands in the way: the lane keeps its
// order even when this process is slower than the lane. Before, the late job took a start behind them,
// and a slow process reordered its own lane.
// A job still asking is named too: its call went out first on the same connection, so Redis ran it first,
// and its answer (the start before the move) comes back before the late call's. While a late call that
// names a job is out, that job does not start, and a lane has one late call out at a time here (one out
// may move the next late job's start).

/** A job of this process between its first gate call and its start. */
export class HeldStart {
  /** Set while a late call that names this job is out: it starts only after the reply. */
  moving: Promise<void> | undefined;
  /** Its start (Redis µs); undefined while its first gate call is out. */
  startUs: number | undefined;

  constructor(
    readonly laneId: string,
    readonly member: string,
  ) {}
}

export class HeldStarts {
  private readonly byLane = new Map<string, Set<HeldStart>>();
  /** Each lane's late call that is out. */
  private readonly lateCalls = new Map<string, Promise<void>>();

  hold(h: HeldStart): void {
    let lane = this.byLane.get(h.laneId);
    if (!lane) this.byLane.set(h.laneId, (lane = new Set()));
    lane.add(h);
  }

  drop(h: HeldStart): void {
    const lane = this.byLane.get(h.laneId);
    if (lane?.delete(h) && lane.size === 0) this.byLane.delete(h.laneId);
  }

  /**
   * Makes `late`'s late call, for the start `heldUs` it missed, as the lane's one call out, naming the
   * lane's other jobs held here that are asking or start at or after `heldUs`. None of them starts before
   * the reply; a reply with a shift moves each of them at or after `heldUs` by it. 'moved', with no call
   * made, when a late call already out moved `late` meanwhile: it waits for its new start instead.
   * With more than `max` of them (the most one call moves), the call names none and is made at once,
   * beside any other: a process that far behind its lane takes fresh starts behind the jobs it holds, as
   * before, rather than one late call at a time (measured: a 20,000-job drain of one lane with 50 handlers
   * went from 5.7-5.9k to 4.8-5.0k jobs/s with them one at a time).
   */
  async lateCall<T extends { go: boolean; shiftUs?: number } | undefined>(late: HeldStart, max: number, call: (named: readonly string[]) => Promise<T>): Promise<T | 'moved'> {
    if (this.toName(late).length > max) return call([]);
    for (let out = this.lateCalls.get(late.laneId); out; out = this.lateCalls.get(late.laneId)) {
      const before = late.startUs;
      await out;
      if (late.startUs !== before) return 'moved';
    }
    const heldUs = late.startUs!;
    const named = this.toName(late);
    if (named.length > max) return call([]);
    let done!: () => void;
    const out = new Promise<void>((resolve) => (done = resolve));
    this.lateCalls.set(late.laneId, out);
    for (const h of named) h.moving = out;
    try {
      const reply = await call(named.map((h) => h.member));
      if (reply?.go && reply.shiftUs !== undefined) for (const h of named) if (h.startUs !== undefined && h.startUs >= heldUs) h.startUs += reply.shiftUs;
      return reply;
    } finally {
      for (const h of named) h.moving = undefined;
      this.lateCalls.delete(late.laneId);
      done();
    }
  }

  /** The lane's other jobs held here that are asking or start at or after `late`'s start. */
  private toName(late: HeldStart): HeldStart[] {
    const named: HeldStart[] = [];
    for (const h of this.byLane.get(late.laneId) ?? []) if (h !== late && (h.startUs === undefined || h.startUs >= late.startUs!)) named.push(h);
    return named;
  }
}
