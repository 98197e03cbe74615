// A pure TypeScript reference model of the lane throttle: admission (lua/throttle-admit.lua), the
// dispatcher (lua/throttle-dispatch.lua), a worker's start, late start and hand-back
// (lua/throttle-start.lua), releases (lua/throttle-release.lua), pauses (lua/throttle-pause.lua), cost
// reconciliation (lua/throttle-reconcile.lua) and spend quotas (lua/includes/quota.lua).
// Property tests drive it and the scripts with the same operations and injected times and require the
// same answers (test/integration/throttle/dispatch-model.test.ts); bench/global-cap.ts uses it, with no
// delivery time and no horizon, as the ideal schedule a real run is measured against. Redis's sorted
// sets order equal scores by member; the model orders the same way.

import { LATE_TOLERANCE_US } from './config.js';
import { quotaArg, type QuotaConfig } from './quota.js';

/** One queued job of a lane: its member `<job id>|<cost>` and its score (predicted start, FIFO). */
interface QueuedMember {
  member: string;
  score: number;
}

interface LaneState {
  d: number;
  c: number;
  p: number;
  v: number;
  i: number;
  b: number;
  /** The control version of the override last written into i and b (0: none; includes/lane.lua ov). */
  ov: number;
  /** An interval learnt from the upstream (µs) and until when it holds (µs). */
  ui: number;
  ue: number;
  /** Units handed to the workers that no worker has said started yet, and those jobs: member -> start µs. */
  od: number;
  out: Map<string, number>;
  /** The latest start a worker said had happened (µs; 0: none; includes/lane.lua ls). */
  ls: number;
  /** Until when (µs) the outgoing set lives, a second past its last start; 0: not known (includes/lane.lua oe). */
  oe: number;
  queue: QueuedMember[];
  /** Members handed out again after being sent back -> the lane key they keep (the lane's `:k` hash). */
  back: Map<string, number>;
}

export interface ModelSettings {
  /** 0: no global cap. */
  globalIntervalUs: number;
  marginPpm: number;
  /** Spend quotas (their windows are computed for each call's instant, as the scripts get them). */
  quotas?: readonly QuotaConfig[];
}

/** A quota as the scripts read their argument (includes/quota.lua parse_quotas). */
interface ScriptQuota {
  index: number;
  lane: boolean;
  cost: boolean;
  limit: number;
  refuse: boolean;
  bounds: [number, number, number, number];
}

export type ModelAdmit =
  | { kind: 'admitted'; startUs: number; position: number }
  | { kind: 'quota_exhausted'; retryUs: number; depth: number; quota: number }
  | { kind: 'queue_full'; retryUs: number; depth: number }
  | { kind: 'wait_too_long'; retryUs: number; waitUs: number; depth: number };

export interface ModelDispatch {
  nextUs: number;
  jobs: { jobId: string; laneId: string; startUs: number }[];
}

export type ModelStart = { go: true; startUs: number; shiftUs?: number } | { go: false; slotUs?: number; askAtUs?: number };

/** A member sent back to its lane is keyed by its first start less this (includes/lane.lua BACK_OFFSET). */
const BACK_OFFSET = 4_000_000_000_000_000;
/** The most later hand-outs of its lane a late job moves with it (lua/throttle-start.lua MAX_MOVED). */
const MAX_MOVED = 64;
/** The longest tail a late job passes its slot on along (lua/throttle-start.lua MAX_TAIL). */
const MAX_TAIL = 16;
/** The outgoing set lives this long past its last start (includes/lane.lua OUTGOING_LIFE_US). */
const OUTGOING_LIFE_US = 1_000_000;

/** The interval and burst a caller whose view of the overrides is at `viewVersion` paces the lane by (includes/lane.lua lane_limits). */
function limitsFor(lane: LaneState, viewVersion: number, intervalUs: number, burst: number): [number, number] {
  return lane.ov > viewVersion ? [lane.i, lane.b] : [intervalUs, burst];
}

function outgoingExpired(oe: number, nowUs: number): boolean {
  return oe > 0 && nowUs >= oe;
}

/** The latest start handed out in a lane, 0 once its outgoing set outlived it (includes/lane.lua latest_out). */
function latestOut(oe: number, nowUs: number): number {
  return oe > 0 && !outgoingExpired(oe, nowUs) ? oe - OUTGOING_LIFE_US : 0;
}

/** `units` x interval stretched by the margin, whole µs (includes/lane.lua span). */
export function span(units: number, interval: number, marginPpm: number): number {
  return Math.floor((units * interval * (1_000_000 + marginPpm)) / 1_000_000);
}

/** An interval with what was learnt from the upstream on top (includes/lane.lua learned). */
function learned(interval: number, learnt: number, untilUs: number, nowUs: number): number {
  return untilUs > nowUs ? Math.max(interval, learnt) : interval;
}

function eligible(c: number, p: number, interval: number, burst: number, marginPpm: number): number {
  return Math.max(c - span(burst, interval, marginPpm), p);
}

/** Redis's order of a sorted set: by score, then by member (bytewise). */
function byScoreThenMember(a: [string, number], b: [string, number]): number {
  return a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
}

function costOf(member: string): number {
  return Number(member.slice(member.lastIndexOf('|') + 1));
}

export class DispatchModel {
  private readonly lanes = new Map<string, LaneState>();
  /**
   * Members whose late start went behind later hand-outs of their lane (they start after them: a start
   * behind them, or back to the lane while they were out, which hands it out after them): the one
   * exception to a lane's FIFO order.
   */
  readonly sentBehind = new Set<string>();
  private readonly waiting = new Map<string, number>();
  private readonly ready = new Map<string, number>();
  private readonly dispatched = new Map<string, number>();
  private globalSlot = 0;
  private globalPause = 0;
  private virtual = 0;
  private learntGlobal = { ui: 0, ue: 0 };
  /** Quota counts: `<lane id, or '' for the queue>|<quota index>|<window start µs>` -> used. */
  private readonly quotaCounts = new Map<string, number>();

  constructor(private readonly settings: ModelSettings) {}

  /** The quotas as a script run at `nowUs` gets them. */
  private quotasAt(nowUs: number): ScriptQuota[] {
    const arg = quotaArg(this.settings.quotas, nowUs / 1000);
    if (arg === '') return [];
    return arg.split(';').map((part, index) => {
      const f = part.split(',');
      return { index, lane: f[0] === 'k', cost: f[1] === 'c', limit: Number(f[2]), refuse: f[3] === 'r', bounds: [Number(f[4]), Number(f[5]), Number(f[6]), Number(f[7])] };
    });
  }

  /** The counter and end of quota `q`'s window holding `t` (includes/quota.lua quota_window). */
  private quotaWindow(q: ScriptQuota, laneId: string, t: number): { key: string; end: number } | undefined {
    const b: readonly number[] = q.bounds;
    const i = [0, 1, 2].find((k) => t >= b[k]! && t < b[k + 1]!);
    if (i === undefined) return undefined;
    return { key: `${q.lane ? laneId : ''}|${q.index}|${b[i]}`, end: b[i + 1]! };
  }

  private quotaBlocked(qs: ScriptQuota[], laneId: string, t: number, cost: number): { reset: number; lane: boolean } | undefined {
    let out: { reset: number; lane: boolean } | undefined;
    for (const q of qs) {
      const w = this.quotaWindow(q, laneId, t);
      if (!w) continue;
      const used = this.quotaCounts.get(w.key) ?? 0;
      if (used + (q.cost ? cost : 1) > q.limit && (!out || w.end > out.reset)) out = { reset: w.end, lane: q.lane };
    }
    return out;
  }

  private quotaAdd(key: string, units: number): void {
    const used = (this.quotaCounts.get(key) ?? 0) + units;
    if (used <= 0) this.quotaCounts.delete(key);
    else this.quotaCounts.set(key, used);
  }

  private quotaCharge(qs: ScriptQuota[], laneId: string, t: number, cost: number, sign: 1 | -1): void {
    for (const q of qs) {
      const w = this.quotaWindow(q, laneId, t);
      if (w) this.quotaAdd(w.key, sign * (q.cost ? cost : 1));
    }
  }

  /** Each quota's count in its window at `nowUs`: a key quota's for `laneId`, a queue quota's. */
  quotaUsed(laneId: string, nowUs: number): number[] {
    return this.quotasAt(nowUs).map((q) => this.quotaCounts.get(this.quotaWindow(q, laneId, nowUs)!.key) ?? 0);
  }

  private lane(id: string): LaneState {
    let lane = this.lanes.get(id);
    if (!lane) {
      lane = { d: 0, c: 0, p: 0, v: 0, i: 1, b: 0, ov: 0, ui: 0, ue: 0, od: 0, out: new Map(), ls: 0, oe: 0, queue: [], back: new Map() };
      this.lanes.set(id, lane);
    }
    return lane;
  }

  private busyCount(): number {
    let n = 0;
    for (const lane of this.lanes.values()) if (lane.d > 0) n++;
    return n;
  }

  /** `fromUs`: an admission's now (lua/throttle-admit.lua puts a new lane in the waiting set no earlier). */
  private activate(id: string, lane: LaneState, fromUs = 0): void {
    lane.v = Math.max(lane.v, this.virtual);
    this.waiting.set(id, Math.max(fromUs, eligible(lane.c, lane.p, lane.i, lane.b, this.settings.marginPpm)));
  }

  private reposition(id: string, lane: LaneState): void {
    if (lane.d <= 0) return;
    this.ready.delete(id);
    this.waiting.set(id, eligible(lane.c, lane.p, lane.i, lane.b, this.settings.marginPpm));
  }

  /**
   * `viewVersion`: the control version of the caller's view of the overrides: a lane whose override is
   * newer is paced and written by its own interval and burst (includes/lane.lua lane_limits).
   */
  admit(nowUs: number, laneId: string, jobId: string, cost: number, capacity: number, intervalUs: number, burst: number, maxWaitUs = 0, viewVersion = 0): ModelAdmit {
    const m = this.settings.marginPpm;
    const lane = this.lane(laneId);
    [intervalUs, burst] = limitsFor(lane, viewVersion, intervalUs, burst);
    const depth = lane.d;
    // includes/lane.lua settle_outgoing: units a second past their start that no worker said had started
    // are taken for started (all of them once the outgoing set has outlived its last start), but for a
    // job no worker has taken yet (in the dispatched set): kept, the set's life stretched for it.
    if (lane.od > 0 && outgoingExpired(lane.oe, nowUs)) {
      lane.out.clear();
      lane.od = 0;
    } else if (lane.od > 0) {
      let silent = 0;
      let latest = 0;
      let kept = false;
      for (const [member, start] of [...lane.out]) {
        if (start > nowUs - OUTGOING_LIFE_US) continue;
        if (this.dispatched.has(`${member}|${laneId}`)) {
          kept = true;
          continue;
        }
        silent += costOf(member);
        latest = Math.max(latest, start);
        lane.out.delete(member);
      }
      if (silent > 0) {
        lane.od = Math.max(0, lane.od - silent);
        lane.ls = Math.max(lane.ls, latest);
      }
      if (kept && lane.oe < nowUs + OUTGOING_LIFE_US) lane.oe = nowUs + OUTGOING_LIFE_US;
    }
    const held = depth + lane.od;
    const busy = this.busyCount() + (depth === 0 ? 1 : 0);
    const g = this.settings.globalIntervalUs;
    const interval = g <= 0 ? intervalUs : Math.max(intervalUs, Math.max(busy, 1) * g);
    let base = Math.max(nowUs, eligible(lane.c, lane.p, intervalUs, burst, m), latestOut(lane.oe, nowUs));
    base = Math.max(base, this.globalPause);
    if (g > 0) base = Math.max(base, this.globalSlot);
    if (held + cost > capacity) {
      const need = held + cost - capacity;
      let freed = 0;
      let at = base;
      // A handed-out job past its start is late: by the lateness tolerance it has started or has a fresh start.
      const lateBy = nowUs + Math.max(1000, Math.min(LATE_TOLERANCE_US, Math.floor(m / 2)));
      let first = true;
      for (const [member, start] of [...lane.out].sort(byScoreThenMember)) {
        freed += costOf(member);
        const t = start <= nowUs ? lateBy : start;
        if (first || t > at) at = t;
        first = false;
        if (freed >= need) break;
      }
      if (freed < need) {
        let ahead = 0;
        for (const q of lane.queue.slice(0, need - freed)) {
          at = base + span(ahead, interval, m);
          ahead += costOf(q.member);
          if (freed + ahead >= need) break;
        }
      }
      return { kind: 'queue_full', retryUs: Math.max(1000, at - nowUs), depth: held };
    }
    let start = base + span(depth, interval, m);
    for (const q of this.quotasAt(nowUs)) {
      const w = this.quotaWindow(q, laneId, start);
      if (!w) continue;
      const pending = q.lane ? (q.cost ? depth : lane.queue.length) : 0;
      if ((this.quotaCounts.get(w.key) ?? 0) + pending + (q.cost ? cost : 1) > q.limit) {
        if (q.refuse) return { kind: 'quota_exhausted', retryUs: w.end - nowUs, depth: held, quota: q.index };
        start = Math.max(start, w.end);
      }
    }
    if (maxWaitUs > 0 && start - nowUs > maxWaitUs) return { kind: 'wait_too_long', retryUs: start - nowUs - maxWaitUs, waitUs: start - nowUs, depth: held };
    const last = lane.queue[lane.queue.length - 1];
    const order = last && last.score >= start ? last.score + 1 : start;
    const position = lane.queue.length;
    lane.queue.push({ member: `${jobId}|${cost}`, score: order });
    lane.d = depth + cost;
    lane.i = intervalUs;
    lane.b = burst;
    if (depth === 0) this.activate(laneId, lane, nowUs);
    return { kind: 'admitted', startUs: start, position };
  }

  /**
   * An operator's override (or its removal) made at control `version` (lua/throttle-limits.lua): the lane
   * is paced by it unless a newer one was applied already; a lane without state keeps it for its next
   * admission.
   */
  limits(laneId: string, intervalUs: number, burst: number, version: number): void {
    const lane = this.lane(laneId);
    if (lane.ov > version) return;
    lane.i = intervalUs;
    lane.b = burst;
    if (version > 0) lane.ov = version;
    this.reposition(laneId, lane);
  }

  /** What the upstream said (lua/upstream-learn.lua writes the same fields): the queue's or one existing lane's. */
  learn(scope: 'queue' | 'lane', laneId: string, intervalUs: number, untilUs: number): void {
    if (scope === 'queue') this.learntGlobal = { ui: intervalUs, ue: untilUs };
    else {
      const lane = this.lanes.get(laneId);
      if (lane) Object.assign(lane, { ui: intervalUs, ue: untilUs });
    }
  }

  dispatch(nowUs: number, horizonUs: number, deliveryUs: number, maxJobs: number): ModelDispatch {
    const m = this.settings.marginPpm;
    const g = learned(this.settings.globalIntervalUs, this.learntGlobal.ui, this.learntGlobal.ue, nowUs);
    const capped = g > 0;
    const horizon = nowUs + horizonUs;
    const qs = this.quotasAt(nowUs);
    let floor = Math.max(nowUs + deliveryUs, this.globalPause);
    const jobs: ModelDispatch['jobs'] = [];
    let nextDue = 0;
    while (jobs.length < maxJobs) {
      let t = floor;
      if (capped && this.globalSlot > t) t = this.globalSlot;
      if (t > horizon) {
        nextDue = t;
        break;
      }
      const by = capped ? t : horizon;
      const moving = [...this.waiting.entries()].filter(([, s]) => s <= by).sort(byScoreThenMember).slice(0, 128);
      for (const [id] of moving) {
        this.waiting.delete(id);
        this.ready.set(id, this.lane(id).v);
      }
      const top = [...this.ready.entries()].sort(byScoreThenMember)[0];
      if (!top) {
        const first = [...this.waiting.entries()].sort(byScoreThenMember)[0];
        if (!first) break;
        const at = first[1];
        if (!capped || at > horizon) {
          nextDue = Math.max(at, floor);
          break;
        }
        floor = at;
        continue;
      }
      const id = top[0];
      const lane = this.lane(id);
      const head = lane.queue[0];
      if (!head) {
        this.ready.delete(id);
        this.waiting.delete(id);
        lane.d = 0;
        continue;
      }
      const cost = costOf(head.member);
      const depth = lane.d - cost;
      const interval = learned(lane.i, lane.ui, lane.ue, nowUs);
      // Never before a start handed out ahead of it (a late job's move can put those past the meter less the burst).
      let start = capped ? t : Math.max(floor, eligible(lane.c, lane.p, interval, lane.b, m), latestOut(lane.oe, nowUs));
      let blocked = qs.length > 0 ? this.quotaBlocked(qs, id, start, cost) : undefined;
      if (blocked && blocked.reset <= horizon) {
        const later = blocked.reset;
        blocked = this.quotaBlocked(qs, id, later, cost);
        if (!blocked) start = later;
      }
      if (blocked && !blocked.lane) {
        nextDue = blocked.reset;
        break;
      }
      if (blocked) {
        this.ready.delete(id);
        this.waiting.set(id, Math.max(blocked.reset, horizon + 1));
        continue;
      }
      if (qs.length > 0) this.quotaCharge(qs, id, start, cost, 1);
      lane.queue.shift();
      if (head.score < 0) lane.back.set(head.member, head.score);
      lane.c = Math.max(lane.c, start) + span(cost, interval, m);
      this.virtual = Math.max(this.virtual, lane.v);
      lane.v += cost * lane.i;
      if (capped) this.globalSlot = start + span(cost, g, m);
      this.dispatched.set(`${head.member}|${id}`, start);
      // A set that outlived its last start starts again from this unit (lua/throttle-dispatch.lua).
      let outUntil = start + OUTGOING_LIFE_US;
      if (outgoingExpired(lane.oe, nowUs)) {
        lane.out.clear();
        lane.od = 0;
      } else if (lane.oe > 0) outUntil = Math.max(outUntil, lane.oe);
      lane.out.set(head.member, start);
      lane.od += cost;
      lane.oe = outUntil;
      jobs.push({ jobId: head.member.slice(0, head.member.lastIndexOf('|')), laneId: id, startUs: start });
      lane.d = Math.max(0, depth);
      this.ready.delete(id);
      if (depth > 0) this.waiting.set(id, eligible(lane.c, lane.p, interval, lane.b, m));
    }
    if (jobs.length === maxJobs) nextDue = nowUs;
    if (nextDue === 0 && this.ready.size > 0) nextDue = Math.max(floor, this.globalSlot);
    return { nextUs: nextDue, jobs };
  }

  /** A worker asks for the start of `member`'s job (lua/throttle-start.lua). */
  start(
    nowUs: number,
    laneId: string,
    member: string,
    how: { mode: 'start' } | { mode: 'late'; heldUs: number; held?: readonly string[] } | { mode: 'requeue'; slotUs?: number | undefined; callMade?: boolean } | { mode: 'mark' },
    intervalUs: number,
    burst: number,
    horizonUs: number,
    lateLeadUs: number,
    lateToleranceUs: number,
    viewVersion = 0,
  ): ModelStart {
    const entry = `${member}|${laneId}`;
    const qs = this.quotasAt(nowUs);
    const park = (slotUs?: number): ModelStart => {
      this.dispatched.set(entry, nowUs);
      return slotUs ? { go: false, slotUs } : { go: false };
    };
    const requeue = (slotUs: number | undefined, callMade: boolean): ModelStart => {
      this.dispatched.delete(entry);
      const lane = this.lane(laneId);
      if (lane.out.delete(member)) lane.od = Math.max(0, lane.od - costOf(member));
      if (lane.queue.some((q) => q.member === member)) return { go: false };
      if (slotUs && !callMade && qs.length > 0) this.quotaCharge(qs, laneId, slotUs, costOf(member), -1);
      let score = lane.back.get(member);
      if (score !== undefined) lane.back.delete(member);
      else if (slotUs) score = slotUs - BACK_OFFSET;
      else score = lane.queue[0] ? lane.queue[0].score - 1 : nowUs - BACK_OFFSET;
      lane.queue.push({ member, score });
      lane.queue.sort((a, b) => byScoreThenMember([a.member, a.score], [b.member, b.score]));
      lane.d += costOf(member);
      [lane.i, lane.b] = limitsFor(lane, viewVersion, intervalUs, burst);
      if (lane.d === costOf(member)) this.activate(laneId, lane);
      return { go: false };
    };
    const late = (held: number, mine: readonly string[] = [], first = false): ModelStart => {
      const m = this.settings.marginPpm;
      const lane = this.lane(laneId);
      const cost = costOf(member);
      const [ownInterval, laneBurst] = limitsFor(lane, viewVersion, intervalUs, burst);
      const laneInterval = learned(ownInterval, lane.ui, lane.ue, nowUs);
      const cap = learned(this.settings.globalIntervalUs, this.learntGlobal.ui, this.learntGlobal.ue, nowUs);
      // Later jobs of its lane handed out: without a cap or quotas they move with it, as long as none
      // has its answer, this job's own member still holds its start and there are at most MAX_MOVED;
      // else it passes its slot on along their tail, or takes the lane's next instant behind them
      // (lua/throttle-start.lua).
      let later: [string, number][] | undefined;
      let earlier: [string, number][] | undefined;
      let behind = false;
      // With later hand-outs out, a job that goes back to its lane is handed out after them: behind them too.
      const laterOut = lane.c > held + span(cost, laneInterval, m);
      const parkLate = () => {
        if (laterOut) this.sentBehind.add(member);
        return park(held);
      };
      if (laterOut && qs.length > 0) return parkLate();
      // Under a cap, when no worker has any of its lane's later hand-outs and all are of its cost, they keep
      // their order on the slots they have (lua/throttle-start.lua, passed on); else it goes back.
      let chain: [string, number][] | undefined;
      // Only hand-outs of its cost take each other's slots (a slot's span is its cost's).
      const ofCost = (list: [string, number][]) => list.every(([other]) => costOf(other) === cost);
      if (laterOut && cap > 0) {
        chain = this.movableLater(lane, laneId, member, held, nowUs, [], true);
        if (!chain) return parkLate();
        // In start order (ZRANGEBYSCORE: by score, then member).
        chain.sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
        if (!ofCost(chain)) return parkLate();
        behind = true;
      }
      if (cap === 0 && qs.length === 0) {
        later = this.movableLater(lane, laneId, member, held, nowUs, mine, laterOut);
        if (laterOut) {
          // Late to its first call behind jobs a worker has: told its start, it asks again naming the ones it holds.
          if (first && !later && this.atWorker(lane, laneId, member, held, nowUs)) return { go: true, startUs: held };
          behind = !later;
          // Else it passes its slot on along the tail, if any, all of its cost (lua/throttle-start.lua movable_tail).
          if (behind) chain = this.movableTail(lane, laneId, member, held, nowUs, mine);
          if (chain && !ofCost(chain)) chain = undefined;
        }
        // The earlier hand-outs no worker has yet move with it too (lua/throttle-start.lua movable_earlier).
        if (later) earlier = this.movableEarlier(lane, laneId, held, MAX_MOVED - later.length);
        if (later && later.length === 0 && earlier!.length === 0) later = undefined;
      }
      // The soonest start a late job can reach: the late lead from now, after any pause.
      const reachable = Math.max(nowUs + lateLeadUs, lane.p, this.globalPause);
      let start = reachable;
      if (behind) start = Math.max(start, eligible(lane.c, lane.p, laneInterval, laneBurst, m), latestOut(lane.oe, nowUs));
      if (cap > 0) start = Math.max(start, this.globalSlot);
      // With earlier hand-outs moved, `start` is the first one's and this job's comes as far after it as
      // before, unless that is past the horizon (then they stay).
      let shift = start - held;
      if (earlier && earlier.length > 0) {
        const firstMoved = start - earlier[earlier.length - 1]![1];
        if (held + firstMoved - nowUs <= horizonUs) {
          shift = firstMoved;
          later!.push(...earlier);
        } else if (later!.length === 0) later = undefined;
        start = held + shift;
      }
      // (A chain's members take their slots past the horizon too: each worker asks again a horizon before.)
      if (start - nowUs > horizonUs && !chain) return parkLate();
      // Passed on: the slots it can still use (a start within the lateness tolerance keeps its slot), in
      // order, then fresh ones from `start` on, a lane's and the cap's span apart (lua/throttle-start.lua).
      let own = start;
      let lastFresh = start;
      if (chain) {
        const usableFrom = Math.max(reachable - lateToleranceUs, lane.p, this.globalPause);
        const slots = chain.filter(([, at]) => at >= usableFrom).map(([, at]) => at);
        const step = Math.max(span(cost, cap, m), span(cost, laneInterval, m));
        const fresh = chain.length + 1 - slots.length;
        for (let t = 0; t < fresh; t++) slots.push((lastFresh = start + t * step));
        // Each fresh slot but the one a late job alone takes is a hand-out again: the lane's fair tag grows.
        if (fresh > 1) lane.v += (fresh - 1) * cost * ownInterval;
        own = slots[0]!;
        chain.forEach(([other], i) => {
          lane.out.set(other, slots[i + 1]!);
          this.dispatched.set(`${other}|${laneId}`, slots[i + 1]!);
        });
      }
      if (qs.some((q) => this.quotaWindow(q, '', held)?.key !== this.quotaWindow(q, '', start)?.key)) return parkLate();
      let after = start + span(cost, laneInterval, m);
      let lastStart = start;
      if (later) {
        for (const [other, at] of later) {
          lane.out.set(other, at + shift);
          // (A held one is at its worker, not in the dispatched set: ZADD XX.)
          if (this.dispatched.has(`${other}|${laneId}`)) this.dispatched.set(`${other}|${laneId}`, at + shift);
          lastStart = Math.max(lastStart, at + shift);
        }
        after = lane.c + shift;
      } else if (behind) {
        after = Math.max(lane.c, lastFresh) + span(cost, laneInterval, m);
        lastStart = Math.max(lastStart, lastFresh);
        // (Passed all its later hand-outs, under a cap, it keeps its place: the last of them takes the start
        // behind. Without a cap a chain is their tail: it is behind those before it.)
        if (!chain || cap === 0) this.sentBehind.add(member);
      }
      lane.c = after;
      // Its unit is held again until its fresh start, whoever took it for started meanwhile (lua/throttle-start.lua).
      let expires = lane.oe;
      if (outgoingExpired(expires, nowUs)) {
        lane.out.clear();
        lane.od = 0;
        expires = 0;
      }
      if (!lane.out.has(member)) lane.od += cost;
      lane.out.set(member, own);
      if (expires === 0 || lastStart + OUTGOING_LIFE_US > expires) lane.oe = lastStart + OUTGOING_LIFE_US;
      this.reposition(laneId, lane);
      if (cap > 0) this.globalSlot = lastFresh + span(cost, cap, m);
      if (later && mine.length > 0) return { go: true, startUs: start, shiftUs: shift };
      // Its own start past the horizon (a chain's fresh one): it asks again a horizon before it.
      if (own - nowUs > horizonUs) {
        this.dispatched.set(entry, own);
        return { go: false, askAtUs: own };
      }
      return { go: true, startUs: own };
    };
    if (how.mode === 'mark') return park();
    if (how.mode === 'requeue') return requeue(how.slotUs, how.callMade === true);
    if (how.mode === 'late') return late(how.heldUs, how.held);
    const slot = this.dispatched.get(entry);
    if (slot === undefined) return park();
    // Moved more than a horizon ahead: asked again a horizon before it (lua/throttle-start.lua).
    if (slot - nowUs > horizonUs) return { go: false, askAtUs: slot };
    this.dispatched.delete(entry);
    if (slot < Math.max(this.lane(laneId).p, this.globalPause)) return park(slot);
    if (nowUs - slot > lateToleranceUs) return late(slot, [], true);
    return { go: true, startUs: slot };
  }

  /**
   * The later hand-outs of a late job's lane that may move with it, or undefined (lua/throttle-start.lua
   * movable_later): its own member still at its start, none of them at a worker yet but the members the
   * late job's own process holds (`mine`), at most MAX_MOVED.
   */
  /** movable_later's "one of them at a worker" (lua/throttle-start.lua): what kept them, when that is it. */
  private atWorker(lane: LaneState, laneId: string, member: string, held: number, nowUs: number): boolean {
    if (outgoingExpired(lane.oe, nowUs) || lane.ls >= held || lane.out.get(member) !== held) return false;
    const later = [...lane.out].filter(([other, at]) => other !== member && at >= held);
    if (later.length > MAX_MOVED) return false;
    return later.some(([other]) => !this.dispatched.has(`${other}|${laneId}`));
  }

  private movableLater(lane: LaneState, laneId: string, member: string, held: number, nowUs: number, mine: readonly string[], withLater: boolean): [string, number][] | undefined {
    if (outgoingExpired(lane.oe, nowUs) || lane.ls >= held || lane.out.get(member) !== held) return undefined;
    if (!withLater) return [];
    const later = [...lane.out].filter(([other, at]) => other !== member && at >= held);
    if (later.length === 0 || later.length > MAX_MOVED) return undefined;
    // Each at no worker yet, or held by the late job's own process (the members it names that are not
    // among them are not its to move).
    const own = new Set(mine);
    return later.some(([other]) => !own.has(other) && !this.dispatched.has(`${other}|${laneId}`)) ? undefined : later;
  }

  /**
   * The later hand-outs of a late job's lane after every later one a worker has or that started, none at a
   * worker yet, in start order, at most MAX_TAIL (lua/throttle-start.lua movable_tail).
   */
  private movableTail(lane: LaneState, laneId: string, member: string, held: number, nowUs: number, mine: readonly string[]): [string, number][] | undefined {
    if (outgoingExpired(lane.oe, nowUs) || lane.out.get(member) !== held) return undefined;
    // ZREVRANGEBYSCORE: by score, then member, both descending.
    const later = [...lane.out]
      // (A started job has left the outgoing set: the lane's latest start bounds the tail too.)
      .filter(([other, at]) => other !== member && at >= held && at > lane.ls)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0));
    const own = new Set(mine);
    const tail: [string, number][] = [];
    for (const e of later) {
      if (own.has(e[0]) || !this.dispatched.has(`${e[0]}|${laneId}`)) break;
      if (tail.length >= MAX_TAIL) return undefined;
      tail.push(e);
    }
    return tail.length > 0 ? tail.reverse() : undefined;
  }

  /**
   * The hand-outs of a late job's lane just before it that no worker has taken yet, latest first, after
   * the lane's latest start, at most `room` (lua/throttle-start.lua movable_earlier).
   */
  private movableEarlier(lane: LaneState, laneId: string, held: number, room: number): [string, number][] {
    if (room <= 0) return [];
    // ZREVRANGEBYSCORE: by score, then member, both descending.
    const before = [...lane.out]
      .filter(([, at]) => at < held && at > lane.ls)
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? 1 : a[0] > b[0] ? -1 : 0))
      .slice(0, room);
    const earlier: [string, number][] = [];
    for (const e of before) {
      if (!this.dispatched.has(`${e[0]}|${laneId}`)) break;
      earlier.push(e);
    }
    return earlier;
  }

  /**
   * A worker started `member`'s job at `startUs` (lua/throttle-started.lua): its unit is free again.
   * True when it was still held.
   */
  started(laneId: string, member: string, startUs: number): boolean {
    const lane = this.lane(laneId);
    const freed = lane.out.delete(member);
    if (freed) lane.od = Math.max(0, lane.od - costOf(member));
    if (startUs > lane.ls) lane.ls = startUs;
    return freed;
  }

  /** Takes members out of a lane unconditionally (lua/throttle-release.lua, mode release). */
  release(laneId: string, members: string[]): number {
    const lane = this.lane(laneId);
    let removed = 0;
    for (const member of members) {
      const at = lane.queue.findIndex((q) => q.member === member);
      if (at < 0) continue;
      lane.queue.splice(at, 1);
      removed += costOf(member);
    }
    if (removed > 0) {
      lane.d = Math.max(0, lane.d - removed);
      if (lane.d === 0) {
        this.waiting.delete(laneId);
        this.ready.delete(laneId);
      }
    }
    return removed;
  }

  /** Holds a lane, or the whole throttle, `pauseUs` from now (lua/throttle-pause.lua). */
  pause(nowUs: number, laneId: string, pauseUs: number, scope: 'lane' | 'global'): number {
    const resume = nowUs + pauseUs;
    if (scope === 'global') {
      const was = this.globalPause;
      if (was < resume) this.globalPause = resume;
      return Math.max(was, resume);
    }
    const lane = this.lane(laneId);
    const was = lane.p;
    if (was < resume) {
      lane.p = resume;
      this.reposition(laneId, lane);
    }
    return Math.max(was, resume);
  }

  /** Charges or refunds a job's actual-less-admitted cost to the meters (lua/throttle-reconcile.lua). */
  reconcile(nowUs: number, laneId: string, diff: number, intervalUs: number, horizonUs: number, slotUs?: number): { laneUs: number; globalUs: number } {
    const m = this.settings.marginPpm;
    if (slotUs !== undefined && diff !== 0) {
      for (const q of this.quotasAt(nowUs)) {
        const w = q.cost ? this.quotaWindow(q, laneId, slotUs) : undefined;
        if (w) this.quotaAdd(w.key, diff);
      }
    }
    const units = (n: number, interval: number) => (n >= 0 ? span(n, interval, m) : -span(-n, interval, m));
    const known = this.lanes.has(laneId);
    const lane = this.lane(laneId);
    // A lane with no state yet has no interval recorded: the script takes the throttle's.
    if (!known) lane.i = intervalUs;
    const interval = learned(lane.i, lane.ui, lane.ue, nowUs);
    const before = lane.c;
    if (diff > 0) lane.c = Math.max(lane.c, nowUs) + units(diff, interval);
    else if (diff < 0) {
      let floor = nowUs;
      const last = [...lane.out].filter(([, start]) => start > nowUs).sort(byScoreThenMember).at(-1);
      if (last) floor = Math.max(floor, last[1] + span(costOf(last[0]), interval, m));
      if (lane.c > floor) lane.c = Math.max(floor, lane.c + units(diff, interval));
    }
    if (lane.c !== before) this.reposition(laneId, lane);
    const cap = learned(this.settings.globalIntervalUs, this.learntGlobal.ui, this.learntGlobal.ue, nowUs);
    if (cap <= 0) return { laneUs: lane.c, globalUs: 0 };
    if (diff > 0) this.globalSlot = Math.max(this.globalSlot, nowUs) + units(diff, cap);
    else if (diff < 0) {
      const floor = nowUs + horizonUs + span(1, cap, m);
      if (this.globalSlot > floor) this.globalSlot = Math.max(floor, this.globalSlot + units(diff, cap));
    }
    return { laneUs: lane.c, globalUs: this.globalSlot };
  }

  /** A lane's queued members, in dispatch order. */
  /** The interval and burst a lane is paced by and the override version they came from (undefined: no lane). */
  pacing(laneId: string): { i: number; b: number; ov: number } | undefined {
    const lane = this.lanes.get(laneId);
    return lane && { i: lane.i, b: lane.b, ov: lane.ov };
  }

  queued(laneId: string): string[] {
    return (this.lanes.get(laneId)?.queue ?? []).map((q) => q.member);
  }

  /** Queued cost units of a lane. */
  depth(laneId: string): number {
    return this.lanes.get(laneId)?.d ?? 0;
  }
}
