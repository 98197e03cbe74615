// Chaos while the load runs: a random lane paused every so often (as a handler's DeferJob or an
// operator would), a few short pauses of the whole throttle, and one worker process SIGKILLed mid-job
// and replaced. Its draws come from a generator of its own: timers interleave with the load's draws.
import type { Throttle } from '../../../src/index.js';
import type { WorkerFleet } from './fleet.js';
import { wallMs, type KillRecord, type Log, type PauseRecord } from './records.js';

export interface ChaosPlan {
  /** A lane pause every this many ms (0: none). */
  pauseEveryMs: number;
  /** Pauses of the whole throttle, spread evenly over the load. */
  globalPauses: number;
  /** The worker kill, this long after the load began (0: none). */
  killAtMs: number;
  /** How long the load runs. */
  durationMs: number;
}

// Lane pauses long enough to hold several of a lane's starts (10/s); throttle pauses short, as they
// hold every lane.
const LANE_PAUSE_MS = { min: 300, spread: 1_200 };
const GLOBAL_PAUSE_MS = { min: 200, spread: 300 };

export class Chaos {
  readonly pauses: PauseRecord[] = [];
  readonly pauseErrors: string[] = [];
  kill: KillRecord | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private killing: Promise<void> = Promise.resolve();

  constructor(
    private readonly throttle: Throttle,
    private readonly fleet: WorkerFleet,
    private readonly random: () => number,
    private readonly pickKey: () => number,
    private readonly log: Log,
  ) {}

  start(plan: ChaosPlan): void {
    if (plan.pauseEveryMs > 0) this.timers.push(setInterval(() => void this.pause('lane'), plan.pauseEveryMs));
    for (let i = 1; i <= plan.globalPauses; i++) {
      // Off the lane pauses' beat, so the two do not always coincide.
      this.timers.push(setTimeout(() => void this.pause('global'), (i * plan.durationMs) / (plan.globalPauses + 1) + 1_234));
    }
    if (plan.killAtMs > 0) {
      this.timers.push(
        setTimeout(() => {
          this.killing = this.fleet.killOneMidJob(this.log).then((kill) => void (this.kill = kill));
        }, plan.killAtMs),
      );
    }
  }

  /** No more chaos; waits for a kill (and its replacement) under way. */
  async stop(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    await this.killing;
  }

  private async pause(scope: 'lane' | 'global'): Promise<void> {
    const lane = this.throttle.keys.laneId(`k${this.pickKey()}`);
    const range = scope === 'global' ? GLOBAL_PAUSE_MS : LANE_PAUSE_MS;
    const ms = range.min + Math.floor(this.random() * range.spread);
    const sentAt = wallMs();
    try {
      const resumeUs = await this.throttle.pause(lane, ms, scope);
      this.pauses.push({ lane, scope, ms, sentAt, answeredAt: wallMs(), resumeAt: resumeUs / 1000 });
    } catch (error) {
      this.pauseErrors.push((error as Error).message.slice(0, 200));
    }
  }
}
