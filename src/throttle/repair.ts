// Lane repair: a submitter that died between admission and enqueue leaves a queued member with no
// job behind it, which would hold a unit of the lane's capacity forever. Workers walk the busy lanes a
// few at a time and remove members whose slot is long past and whose BullMQ job does not exist.
import type { Cluster, Redis } from 'ioredis';
import type { LaneScripts } from './lane-scripts.js';
import type { ThrottleKeys } from './keys.js';

export class LaneRepairer {
  private rank = 0;

  constructor(
    private readonly client: Redis | Cluster,
    private readonly keys: ThrottleKeys,
    private readonly lanes: LaneScripts,
    /** Members overdue by more than this are checked (ms). */
    private readonly overdueMs: number,
    /** Lanes looked at per pass. */
    private readonly lanesPerPass = 100,
  ) {}

  /** One pass over the next `lanesPerPass` busy lanes; returns the cost units removed. */
  async pass(): Promise<number> {
    const [seconds, micros] = await this.client.time();
    const cutoffUs = Number(seconds) * 1e6 + Number(micros) - this.overdueMs * 1000;
    const laneIds = await this.client.zrange(this.keys.busy, String(this.rank), String(this.rank + this.lanesPerPass - 1));
    this.rank = laneIds.length < this.lanesPerPass ? 0 : this.rank + laneIds.length;
    let removed = 0;
    for (const laneId of laneIds) {
      const overdue = await this.client.zrangebyscore(this.keys.laneQueue(laneId), '-inf', String(cutoffUs), 'LIMIT', 0, 200);
      if (overdue.length === 0) continue;
      const exists = await Promise.all(overdue.map((m) => this.client.exists(this.keys.job(m.slice(0, m.lastIndexOf('|'))))));
      const missing = overdue.filter((_, i) => exists[i] === 0);
      if (missing.length) removed += await this.lanes.repair(laneId, missing);
    }
    return removed;
  }
}
