// The lane script wrappers of one throttle at each distinct set of lane limits (its own, each plan's,
// each override's): made once and reused, admission on the hot-path client, the gate on the resilient one.
import { timingOf, type ThrottleConfig } from './config.js';
import type { ThrottleContext } from './context.js';
import type { ThrottleKeys } from './keys.js';
import { limitsId, type LaneLimits } from './lane-limits.js';
import { LaneScripts } from './lane-scripts.js';

/** Plans and overrides are few; this only bounds a mistake (the map is cleared when it is reached). */
const MAX_VARIANTS = 1_000;

export class LaneVariants {
  private readonly made = new Map<string, { admit: LaneScripts; gate?: LaneScripts }>();

  constructor(
    private readonly ctx: ThrottleContext,
    private readonly keys: ThrottleKeys,
    private readonly config: Readonly<ThrottleConfig>,
  ) {}

  /** Admission scripts at `limits`. */
  admit(limits: LaneLimits): LaneScripts {
    return this.variant(limits).admit;
  }

  /** Gate scripts at `limits` (on the client that waits out a Redis restart). */
  gate(limits: LaneLimits): LaneScripts {
    const v = this.variant(limits);
    v.gate ??= new LaneScripts(this.ctx.bull().scripts, this.keys, this.timingOf(limits), limits.capacity, limits.burst, this.controlVersion);
    return v.gate;
  }

  /** The version of this process's view of the overrides, sent with every lane script call. */
  private readonly controlVersion = (): number => this.ctx.overrides?.()?.version ?? 0;

  private variant(limits: LaneLimits): { admit: LaneScripts; gate?: LaneScripts } {
    const id = limitsId(limits);
    let v = this.made.get(id);
    if (!v) {
      if (this.made.size >= MAX_VARIANTS) this.made.clear();
      v = { admit: new LaneScripts(this.ctx.admission().scripts, this.keys, this.timingOf(limits), limits.capacity, limits.burst, this.controlVersion) };
      this.made.set(id, v);
    }
    return v;
  }

  private timingOf(limits: LaneLimits) {
    return timingOf({ ...this.config, ratePerSecond: limits.ratePerSecond, maxWaitMs: limits.maxWaitMs > 0 ? limits.maxWaitMs : undefined });
  }
}
