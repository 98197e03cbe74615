// The throttle of each queue of the rules in force: made on first use, remade when the rules change
// the queue's settings.
import type { QueueRule } from '../rules/index.js';
import type { Sluice } from '../sluice.js';
import type { Throttle } from '../throttle/throttle.js';
import { sameConfig } from '../validation.js';

export class QueueThrottles {
  private readonly made = new Map<string, { settings: QueueRule['throttle']; throttle: Throttle }>();

  constructor(private readonly sluice: Sluice) {}

  of(queue: QueueRule): Throttle {
    const settings = queue.throttle;
    const known = this.made.get(queue.name);
    if (known && sameConfig(known.settings, settings)) return known.throttle;
    const throttle = this.sluice.throttle(queue.name, queue.throttle);
    this.made.set(queue.name, { settings, throttle });
    return throttle;
  }
}
