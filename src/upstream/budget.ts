// The budget controller: what one upstream answer does to the learned interval (`ui`, µs between
// starts) and until when it holds (`ue`). The reference model of lua/upstream-learn.lua, the same
// arithmetic in the same order (doubles in both), property-tested against the script.
//
// * A budget (remaining units, time to reset) sets ui = resetUs / max(1, remaining): what is left
//   lasts until the reset. Never below the configured interval; no floor (the upstream said so).
//   On a shard of a sharded throttle (queue scope) `remaining` is the whole queue's: the shard takes
//   the part of it its share of the global cap is of the cap (`xi`, while `xe` holds), else an equal
//   part; at least 1 while anything is left. The parts sum to at most what is left (plus one per shard
//   when fewer units are left than shards).
// * A 429 without a budget halves the rate (ui x 2) down to the floor, remembering the interval
//   that drew it (um); the decrease holds `holdUs`, then the configured rate is tried again. Only
//   one decrease per overshoot: a 429 of a call started before the last decrease is ignored.
// * A success while a decrease holds adds back 1/steps of the configured rate, up to 95% of the rate
//   that drew the last 429: the rate settles between half and 95% of it, and no higher.

/** The learned state in a hash: ui, ue, um (0 when absent), and a lane's own interval `i`. */
export interface LearnState {
  exists: boolean;
  ui: number;
  ue: number;
  um: number;
  /** The lane's own interval (lane hashes only). */
  i?: number | undefined;
  /** A shard's share of the global cap: µs between starts, and until when it holds (global hashes of shards only). */
  xi?: number | undefined;
  xe?: number | undefined;
}

export type LearnEvent = { kind: 'budget'; remaining: number; resetUs: number } | { kind: 'throttled'; startedUs: number } | { kind: 'ok' };

export interface LearnArgs {
  nowUs: number;
  configuredUs: number;
  /** 0: 20 x the configured interval. */
  floorUs: number;
  holdUs: number;
  lane: boolean;
  increaseSteps: number;
  /** The throttle's shards (1 or absent: not sharded). */
  shards?: number | undefined;
  /** The throttle's global cap, starts per second (0 or absent: none): a shard's part of a budget is its share of it. */
  capPerSecond?: number | undefined;
}

export interface LearnResult {
  written: boolean;
  ui: number;
  ue: number;
  um: number;
}

/** How long a decrease after a 429 holds before the configured rate is tried again. */
export const AIMD_HOLD_MS = 60_000;
/** Successes that add back the whole configured rate. */
export const AIMD_INCREASE_STEPS = 50;
/** The default floor is this many times the configured interval (1/20 of the configured rate). */
export const DEFAULT_FLOOR_FACTOR = 20;

/** The model: the state after `event`, and whether the script writes it. Pure; `state` is not changed. */
export function learn(state: LearnState, event: LearnEvent, a: LearnArgs): { result: LearnResult; state: LearnState } {
  const same = (r: LearnResult) => ({ result: r, state });
  if (a.lane && !state.exists) return same({ written: false, ui: 0, ue: 0, um: 0 });
  const configured = a.lane && state.i !== undefined ? state.i : a.configuredUs;
  const floorUs = a.floorUs <= 0 ? configured * DEFAULT_FLOOR_FACTOR : Math.max(a.floorUs, configured);
  let { ui, ue, um } = state;
  const live = ue > a.nowUs;
  if (!live) [ui, ue, um] = [configured, a.nowUs, 0];
  if (event.kind === 'budget') {
    const remaining = a.lane ? event.remaining : shardPart(event.remaining, state, a);
    ui = Math.max(configured, Math.floor(event.resetUs / Math.max(1, remaining)));
    ue = a.nowUs + event.resetUs;
    um = 0;
  } else if (event.kind === 'throttled') {
    if (live && um > 0 && event.startedUs < ue - a.holdUs) return same({ written: false, ui, ue, um });
    um = ui;
    ui = Math.min(floorUs, Math.max(configured, ui * 2));
    ue = a.nowUs + a.holdUs;
  } else {
    if (!live || um === 0) return same({ written: false, ui, ue, um });
    const c = configured * a.increaseSteps;
    const next = Math.min(floorUs, Math.max(configured, Math.floor((um * 20) / 19), Math.floor((ui * c) / (c + ui))));
    if (next === ui) return same({ written: false, ui, ue, um });
    ui = next;
  }
  return { result: { written: true, ui, ue, um }, state: { ...state, exists: true, ui, ue, um } };
}

/** A shard's part of a queue's `remaining` budget (the whole of it when the throttle is not sharded). */
export function shardPart(remaining: number, state: Pick<LearnState, 'xi' | 'xe'>, a: Pick<LearnArgs, 'nowUs' | 'shards' | 'capPerSecond'>): number {
  const shards = a.shards ?? 1;
  if (shards <= 1 || remaining <= 0) return remaining;
  const xi = state.xi ?? 0;
  const cap = a.capPerSecond ?? 0;
  // Shares are whole starts per second, written as µs between starts: read back as the whole number.
  const part = cap > 0 && xi > 0 && (state.xe ?? 0) > a.nowUs ? (remaining * Math.floor(1e6 / xi + 0.5)) / cap : remaining / shards;
  return Math.max(1, Math.floor(part));
}

/** The interval the dispatcher paces by under `state` at `nowUs` (its rule: max(configured, ui) while ue > now). */
export function effectiveInterval(state: LearnState, configuredUs: number, nowUs: number): number {
  return state.ue > nowUs ? Math.max(configuredUs, state.ui) : configuredUs;
}
