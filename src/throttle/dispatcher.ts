// The dispatcher loop of one throttle in one process: runs throttle-dispatch.lua round after round and
// hands each job it chose to BullMQ (promote: from the parked delayed set to the wait list), where any
// worker takes it just before its start instant. Every process with a worker (or a waiting schedule()
// call) runs one; the script is atomic, so several share the work. Between rounds the loop sleeps until
// the next start comes within the horizon (a local timer: Redis's own blocking timeouts are only as
// fine as its 100 ms cron), or until an admission into an idle lane wakes it (a message on the
// throttle's wake channel, on a subscriber connection of its own).
import { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { ThrottleKeys } from './keys.js';
import type { DispatchReply, LaneScripts } from './lane-scripts.js';
import { redisClock, wallMs, type RedisClock } from './redis-clock.js';
import { sleep } from './sleep.js';

/**
 * How long an admitted job waits in BullMQ's delayed set for the dispatcher (ms). Only a job whose
 * dispatch was lost ever comes back by itself after this; the worker then queues it again at the head
 * of its lane.
 */
export const PARK_MS = 3_600_000;

/** Jobs one round may hand out: keeps each script call short. */
const MAX_JOBS_PER_ROUND = 256;
/**
 * Jobs handed out and not yet taken by a worker (its start call), in all processes, beyond which no
 * round hands out more: about what one loaded process takes within the delivery allowance (10 ms).
 * `bench/late-handback.ts` measured 32 against 64, 100 and 256 (one round, no bound).
 */
const MAX_OUTSTANDING = 32;
/**
 * How long after a worker of this process last handed a start back the bound holds (ms). Without a
 * hand-back the workers keep up and rounds stay whole (256 jobs): held all the time, the bound cut the
 * drain of many one-job lanes by about a quarter (bench/throttle-scale.ts).
 */
const BEHIND_HOLD_MS = 1_000;
/** Hand-backs within BEHIND_HOLD_MS that bind the rounds (the overload the bound is for made thousands a second). */
const BEHIND_HANDBACKS = 3;
/** A dispatched entry this long past its start is lost or very late (lane repair's to bring back): not counted (µs). */
const FORGOTTEN_US = 1_000_000;
/**
 * How often every waiting schedule() call is looked up in the dispatched set (ms). Between those, a
 * round reads only the entries handed out since the previous one (lookForWaiters): with thousands of
 * calls waiting, looking each up every round took most of a core (20,000 waiting: 0.77 of a core, and
 * starts fell to 175/s under a 200/s cap; bench/schedule-waiters.ts).
 */
const FULL_LOOK_MS = 2_000;
/** With nothing queued, the loop looks again at least this often (ms), woken or not. */
const IDLE_MS = 250;
/** Rounds are never held apart longer than this (ms), whatever the horizon. */
const MAX_ROUND_GAP_MS = 10;
/** After a failed round (Redis away), the next one comes this much later (ms). */
const RETRY_MS = 100;

export interface DispatcherDeps {
  lanes: LaneScripts;
  keys: ThrottleKeys;
  /** The resilient client (waits out a Redis restart). */
  client: Redis | Cluster;
  /** The dispatch horizon (µs): a round hands out the starts due within it. */
  horizonUs: number;
  /** The time a hand-out allows for reaching a worker (µs): every job is handed out at least this far ahead. */
  deliveryUs?: number;
  onError?: (error: unknown) => void;
  /** The process's view of Redis's clock, which every round's reply refines (default: the process's one). */
  clock?: RedisClock;
}

export class Dispatcher {
  private users = 0;
  /** Of those, workers of this process. */
  private workers = 0;
  /** Until when (local ms) the bound on jobs handed out and not taken holds: workers here were late. */
  private behindUntilMs = 0;
  /** When (local ms) this process's workers last handed starts back: the latest BEHIND_HANDBACKS. */
  private readonly handBacks: number[] = [];
  private loop: Promise<void> | undefined;
  private stopping = false;
  private subscriber: Redis | Cluster | undefined;
  private wakeUp: (() => void) | undefined;
  /** A wake message came since the current round began: the next pause is skipped (it would miss it). */
  private woken = false;
  private queue: Queue | undefined;
  /** In-process jobs (schedule()) waiting here for their start: dispatched entry -> resolve. */
  private readonly waiters = new Map<string, (startUs: number) => void>();
  /** The same waiters' entries by job id (a round's reply names jobs). */
  private readonly waiterEntries = new Map<string, string>();
  /** Waiters not looked up in the dispatched set yet: their job may have been handed out before they came. */
  private readonly freshWaiters = new Set<string>();
  /** Told how many BullMQ jobs each round handed out (this process's workers fetch more at once). */
  private readonly handOutListeners = new Set<(jobs: number) => void>();
  /** Redis µs of the previous look at the dispatched set (0: none yet). */
  private lookedAtUs = 0;
  /** When every waiter was last looked up (local ms). */
  private fullLookAtMs = 0;

  /** The least time between two rounds that are not bounded (ms): see run(). */
  private readonly roundGapMs: number;
  /** The least time between two rounds while another process's dispatcher hands the starts out (ms): see run(). */
  private readonly followGapMs: number;
  /** The next start (Redis µs) the previous round's reply named: what this loop timed its next round for (0: none). */
  private expectedNextUs = 0;

  constructor(private readonly deps: DispatcherDeps) {
    // A quarter of the horizon's time beyond the delivery time (3.75 ms under a cap: 25 ms less 10),
    // so a round that comes late still finds each start at least ~1.5 delivery times ahead of it (half
    // the spare time was tried: the first second at 200/s fell from 161-175 starts to 141-158).
    const spareUs = deps.deliveryUs === undefined ? 0 : deps.horizonUs - deps.deliveryUs;
    this.roundGapMs = Math.min(MAX_ROUND_GAP_MS, Math.max(0, spareUs / 4 / 1000));
    // Three quarters of the spare time (11.25 ms under a cap): should the process handing the starts
    // out stop (it died, a long GC), the next round here still comes before the starts it handed out
    // run out, so no start is given late and under a cap no slot is lost.
    // (Without the delivery time the loop knows of no spare time, and does not follow either.)
    this.followGapMs = Math.max(this.roundGapMs, (spareUs * 3) / 4 / 1000);
  }

  /**
   * One more user (a worker, a schedule() call): the loop runs while there is one. Back-pressure
   * applies while a worker of this process uses it: a process that only waits for schedule() calls
   * would otherwise be held up by jobs handed out that no worker takes (the workers are down).
   */
  acquire(worker = false): void {
    this.users++;
    // A new worker starts bounded: its first rounds meet a backlog before its event loop is warm.
    if (worker) {
      this.workers++;
      this.bind(Date.now());
    }
    if (!this.loop) {
      this.stopping = false;
      this.loop = this.run();
    }
  }

  /** Stops the loop whoever still uses it (the throttle is closing). */
  async close(): Promise<void> {
    this.users = 1;
    this.workers = 0;
    await this.release();
  }

  /** One user fewer (`worker`: as it was acquired); the last one stops the loop (and waits for its round to end). */
  async release(worker = false): Promise<void> {
    this.users = Math.max(0, this.users - 1);
    if (worker) this.workers = Math.max(0, this.workers - 1);
    if (this.users > 0) return;
    if (!this.loop) {
      await this.queue?.close().catch(() => undefined);
      this.queue = undefined;
      return;
    }
    this.stopping = true;
    this.wakeUp?.();
    const loop = this.loop;
    await loop;
    if (this.loop === loop) this.loop = undefined;
    this.subscriber?.disconnect();
    this.subscriber = undefined;
    await this.queue?.close().catch(() => undefined);
    this.queue = undefined;
  }

  /**
   * Resolves with the start µs the dispatcher gives an in-process job (`entry`: `<job id>|<cost>|<lane id>`),
   * whichever process's dispatcher gives it.
   */
  waitFor(entry: string): Promise<number> {
    return new Promise((resolve) => {
      this.waiters.set(entry, resolve);
      this.waiterEntries.set(entryJobId(entry), entry);
      this.freshWaiters.add(entry);
    });
  }

  /** Calls `listener` with the number of BullMQ jobs of every round that handed some out; returns its removal. */
  onHandOut(listener: (jobs: number) => void): () => void {
    this.handOutListeners.add(listener);
    return () => this.handOutListeners.delete(listener);
  }

  /** Forgets a waiter (its call gave up). */
  forget(entry: string): void {
    this.unwait(entry);
  }

  private async run(): Promise<void> {
    // The queue lane repair's promotes go through, connected before the first round.
    await this.bullQueue().waitUntilReady().catch(() => undefined);
    this.listen();
    while (!this.stopping) {
      let reply: DispatchReply;
      let bounded = false;
      this.woken = false;
      try {
        // Back-pressure: the workers are behind while many jobs handed out wait to be taken, and a
        // job taken after its instant goes back to its lane. Handing out more then only makes every
        // job late (measured: no start at all, thousands of hand-backs per second); the round then
        // hands out at most MAX_OUTSTANDING less what is out, counted inside the round (one call, and
        // exact however many dispatchers run), or none, and its next instant says to look again 2 ms later.
        bounded = this.workers > 0 && Date.now() < this.behindUntilMs;
        const sent = wallMs();
        reply = await this.deps.lanes.dispatch(MAX_JOBS_PER_ROUND, '', bounded ? { maxOutstanding: MAX_OUTSTANDING, forgottenUs: FORGOTTEN_US } : undefined);
        // A round's reply carries Redis's TIME, read after the call left: one more bound on the clock
        // offset the workers start jobs by (src/throttle/redis-clock.ts). Only the gate's calls taught it
        // before, and at a worker's start its first few, made while the process and Redis are busiest,
        // can put its starts early by their latency (in CI a 1 s window once held 21 starts at 20/s as two
        // workers came up to a backlog: not traced, and this is the one early-start path known).
        (this.deps.clock ?? redisClock).sample(sent, reply.nowUs);
        this.handOut(reply);
        if (this.waiters.size > 0) await this.lookForWaiters(reply.nowUs);
      } catch (error) {
        if (this.stopping) break;
        this.deps.onError?.(error);
        await sleep(RETRY_MS);
        continue;
      }
      // Every process with a worker runs this loop, and each came for every start as it entered the
      // horizon: one of them handed it out and the others found nothing (4 worker processes at 200/s:
      // 6 script calls a job, 4 of them rounds). A round that handed out nothing because the start it
      // was timed for is gone (another dispatcher gave it) makes this loop a follower: its rounds come
      // at least followGapMs apart until one of them finds a start to hand out again.
      const following = !bounded && reply.jobs.length === 0 && this.expectedNextUs !== 0 && (reply.nextUs === 0 || reply.nextUs > this.expectedNextUs);
      this.expectedNextUs = reply.nextUs;
      if (reply.jobs.length >= MAX_JOBS_PER_ROUND) continue;
      // Come back as soon as the next start enters the horizon: a round that comes late (a busy event
      // loop, a loaded machine) still finds it ahead of it, by up to the horizon less the delivery time.
      let waitMs = reply.nextUs === 0 ? IDLE_MS : (reply.nextUs - this.deps.horizonUs - reply.nowUs) / 1000 + 1;
      // Starts a millisecond apart (a global cap of 1,000/s) each entered the horizon a millisecond
      // after the one before, and a round came for every one or two of them: each a script call, its
      // reply, a timer, a wake-up of the workers and an empty fetch of theirs. Rounds come at least
      // roundGapMs apart, and each then hands out a few starts, every one still at least the horizon
      // less the gap ahead (1,000/s under a cap: worker CPU per job 530 -> 459 µs, Redis 368 -> 332;
      // bench/start-cost.ts). Not while the workers are behind: bounded rounds look every 2 ms.
      if (!bounded) waitMs = Math.max(waitMs, this.roundGapMs);
      if (following) waitMs = Math.max(waitMs, this.followGapMs);
      if (this.waiters.size > 0) waitMs = Math.min(waitMs, 10);
      await this.pause(Math.min(IDLE_MS, Math.max(1, waitMs)));
    }
  }

  /**
   * A worker of this process handed a start back (it came too late, or its lane was paused): once that
   * is a pattern (BEHIND_HANDBACKS within BEHIND_HOLD_MS), bound the rounds a while. One hand-back is
   * no sign of overload: a timer that fired 6 ms late (a GC, a busy turn) comes about once per 1,000
   * starts at 1,000/s, and when each such one bound the rounds for a second, the rounds ran bounded
   * nearly all the time (1,786 of a run's first 2,000; docs/benchmarks.md, "What a start costs").
   */
  behind(): void {
    const now = Date.now();
    this.handBacks.push(now);
    if (this.handBacks.length > BEHIND_HANDBACKS) this.handBacks.shift();
    if (this.handBacks.length === BEHIND_HANDBACKS && this.handBacks[0]! > now - BEHIND_HOLD_MS) this.bind(now);
  }

  private bind(now: number): void {
    this.behindUntilMs = now + BEHIND_HOLD_MS;
  }

  /**
   * In-process jobs (schedule()) resolve their waiter here. BullMQ jobs are on the wait list already:
   * the dispatch script moved them there in the same step (a job a worker is parking right now, not in
   * the delayed set yet, is found by lane repair's sweep of old dispatched entries).
   */
  private handOut(reply: DispatchReply): void {
    // The jobs for the workers: all but this process's schedule() calls (another process's count too, so
    // the listeners hear an upper bound: a fetch too many finds nothing).
    let bullJobs = reply.jobs.length;
    for (const j of reply.jobs) {
      if (!j.jobId.startsWith('p')) continue;
      const entry = this.waiterEntries.get(j.jobId);
      if (entry === undefined) continue;
      this.resolve(entry, j.startUs);
      bullJobs--;
    }
    if (bullJobs > 0) for (const listener of this.handOutListeners) listener(bullJobs);
  }

  /** Hands one parked job to the workers now (lane repair, for a dispatch whose promote was lost). */
  async promote(jobId: string): Promise<void> {
    await this.bullQueue().backend.promote(jobId);
  }

  /**
   * Waiters whose job another process's dispatcher handed out. Every entry is scored by its start, and a
   * start is given at least the delivery time after its hand-out: the entries handed out since the
   * previous look all score at or above that look's Redis time, so a round reads only those (a horizon's
   * worth of hand-outs), not every waiter. A waiter that came since is looked up by its entry (its job
   * may have been handed out before it came), and every FULL_LOOK_MS all are.
   */
  private async lookForWaiters(nowUs: number): Promise<void> {
    const client = this.deps.client;
    const full = Date.now() - this.fullLookAtMs >= FULL_LOOK_MS;
    const lookUp = full ? [...this.waiters.keys()] : [...this.freshWaiters];
    const [scores, recent] = await Promise.all([
      lookUp.length > 0 ? (client.zmscore(this.deps.keys.dispatched, ...lookUp) as Promise<(string | null)[]>) : Promise.resolve([]),
      // (The first look is a full one: a partial look always has the previous one's instant.)
      full ? Promise.resolve([]) : (client.zrangebyscore(this.deps.keys.dispatched, String(this.lookedAtUs), '+inf', 'WITHSCORES') as Promise<string[]>),
    ]);
    if (full) this.fullLookAtMs = Date.now();
    this.lookedAtUs = nowUs;
    for (const entry of lookUp) this.freshWaiters.delete(entry);
    lookUp.forEach((entry, i) => {
      const score = scores[i];
      if (score !== null && score !== undefined) this.resolve(entry, Number(score));
    });
    for (let i = 0; i < recent.length; i += 2) {
      if (this.waiters.has(recent[i]!)) this.resolve(recent[i]!, Number(recent[i + 1]));
    }
  }

  private resolve(entry: string, startUs: number): void {
    const resolve = this.waiters.get(entry);
    this.unwait(entry);
    resolve?.(startUs);
  }

  private unwait(entry: string): void {
    this.waiters.delete(entry);
    this.waiterEntries.delete(entryJobId(entry));
    this.freshWaiters.delete(entry);
  }

  /** Sleeps `ms`, or less when an admission into an idle lane publishes on the wake channel. */
  private async pause(ms: number): Promise<void> {
    this.listen();
    if (this.woken) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeUp = done;
    });
    this.wakeUp = undefined;
  }

  /** Subscribes to the wake channel once; a lost subscription only costs latency (the loop polls anyway). */
  private listen(): void {
    if (this.subscriber) return;
    const subscriber = (this.deps.client as Redis).duplicate() as Redis | Cluster;
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined);
    subscriber.on('message', () => {
      this.woken = true;
      this.wakeUp?.();
    });
    subscriber.subscribe(this.deps.keys.wake).catch(() => undefined);
  }

  private bullQueue(): Queue {
    if (!this.queue) {
      this.queue = new Queue(this.deps.keys.name, { connection: this.deps.client, prefix: this.deps.keys.bullPrefix });
      this.queue.on('error', () => undefined);
    }
    return this.queue;
  }
}

/** The job id of a dispatched entry, `<job id>|<cost>|<lane id>`. */
function entryJobId(entry: string): string {
  return entry.slice(0, entry.indexOf('|'));
}
