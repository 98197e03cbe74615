// The TS<->Lua seam: every lua/*.lua script with its KEYS and ARGV by name, in the order the script reads
// them. Callers build arguments by name from here; test/unit/redis/script-table.test.ts holds each
// script's header comment (`-- KEYS[i]  name: ...`, `-- ARGV[i]  name: ...`) to this table.
import { SluiceError } from '../errors.js';

/** Script arguments as Redis sees them. */
export type ScriptArg = string | number;

/** 0..63 as strings, made once. */
const SMALL: readonly string[] = Array.from({ length: 64 }, (_, i) => String(i));

/**
 * A count (a cost, a number of keys or arguments) as the string Redis receives: a hot path sends
 * strings, not numbers, since ioredis converts each number of each command it sends (String() per
 * argument over a mixed array: ~0.2 µs per number measured, a dozen numbers per three-limit request).
 */
export function countText(n: number): string {
  return n >= 0 && n < SMALL.length && Number.isInteger(n) ? SMALL[n]! : String(n);
}

/** One script's signature. */
export interface ScriptShape {
  /** KEYS[1..n] by name. */
  readonly keys: readonly string[];
  /** ARGV[1..n] by name. */
  readonly argv: readonly string[];
  /** Name of a variable tail KEYS[n+1..] (a list), when the script takes one. */
  readonly keysRest?: string;
  /** Name of a variable tail ARGV[n+1..] (a list), when the script takes one. */
  readonly argvRest?: string;
  /**
   * Also loaded in a batched form (several decisions in one script call, src/redis/scripts.ts): only for
   * scripts with exactly one key and no variable tail.
   */
  readonly batched?: boolean;
  /**
   * A many-key script's KEYS and ARGV that the calls of one batch mostly have in common (a throttle's
   * own keys and limits): in a batch, a call whose full-length KEYS and ARGV repeat the previous call's
   * at these names sends only the others (src/redis/script-forms.ts, batchedManyLua).
   */
  readonly batchShared?: { readonly keys: readonly string[]; readonly argv: readonly string[] };
}

/** Every script in lua/ (file name without `.lua`). Adding a script means adding it here, header and all. */
export const SCRIPT_TABLE = {
  'fixed-window': { keys: ['state'], argv: ['now', 'limit', 'windowMs', 'cost', 'record'], batched: true },
  'sliding-log': { keys: ['state'], argv: ['now', 'limit', 'windowMs', 'cost', 'record', 'recordRejected'], batched: true },
  'sliding-counter': { keys: ['state'], argv: ['now', 'limit', 'windowMs', 'cost', 'record', 'rounding'], batched: true },
  'token-bucket': { keys: ['state'], argv: ['now', 'capacity', 'intervalUs', 'cost', 'record'], batched: true },
  gcra: { keys: ['state'], argv: ['now', 'intervalUs', 'burst', 'cost', 'record'], batched: true },
  'concurrency-acquire': { keys: ['state'], argv: ['now', 'limit', 'leaseMs', 'cost', 'record', 'leaseId'], batched: true },
  'concurrency-release': { keys: ['state'], argv: ['leaseId'] },
  /** Every enforcing limit of one request, all-or-nothing (src/limiters/all-or-nothing.ts). */
  limits: { keys: [], keysRest: 'states', argv: [], argvRest: 'decisions' },
  'concurrency-extend': { keys: ['state'], argv: ['now', 'leaseMs', 'leaseId'] },
  'throttle-admit': {
    keys: ['lane', 'laneQueue', 'busy', 'job', 'pending', 'waiting', 'global', 'wake', 'laneOutgoing', 'delayed', 'events', 'dispatched'],
    argv: [
      'now', 'jobId', 'cost', 'capacity', 'laneIntervalUs', 'burst', 'globalIntervalUs', 'maxWaitUs', 'laneId', 'marginPpm', 'idempotent', 'enqueueWithinUs', 'planName', 'quotas',
      'controlVersion', 'park', 'jobName', 'dataHead', 'dataTail', 'optsTail', 'parkMs', 'eventHead', 'eventMaxLen',
    ],
    batchShared: {
      keys: ['busy', 'pending', 'waiting', 'global', 'wake', 'delayed', 'events', 'dispatched'],
      argv: ['capacity', 'laneIntervalUs', 'burst', 'globalIntervalUs', 'maxWaitUs', 'marginPpm', 'enqueueWithinUs', 'quotas', 'controlVersion', 'park', 'jobName', 'optsTail', 'parkMs', 'eventMaxLen'],
    },
  },
  'throttle-dispatch': {
    keys: ['waiting', 'ready', 'global', 'busy', 'dispatched', 'meta', 'delayed', 'wait', 'marker', 'events'],
    argv: ['now', 'horizonUs', 'deliveryUs', 'maxJobs', 'globalIntervalUs', 'marginPpm', 'lanePrefix', 'jobPrefix', 'missingRetryUs', 'quotas', 'maxOutstanding', 'forgottenUs'],
  },
  'throttle-start': {
    keys: ['lane', 'laneQueue', 'busy', 'global', 'dispatched', 'waiting', 'ready', 'wake', 'laneOutgoing', 'laneBack', 'wait', 'marker'],
    argv: ['now', 'member', 'laneId', 'mode', 'heldUs', 'laneIntervalUs', 'burst', 'globalIntervalUs', 'marginPpm', 'horizonUs', 'lateLeadUs', 'lateToleranceUs', 'quotas', 'refund', 'controlVersion'],
    argvRest: 'held',
  },
  'throttle-started': {
    keys: ['lane', 'laneOutgoing', 'events'],
    argv: ['member', 'startUs', 'eventJobId', 'eventDetail', 'eventMaxLen'],
  },
  'throttle-release': {
    keys: ['lane', 'laneQueue', 'busy', 'waiting', 'ready'],
    keysRest: 'jobs',
    argv: ['now', 'laneId', 'mode'],
    argvRest: 'members',
  },
  /** BullMQ's fetch of a throttle's job leaves no base marker when none waits (src/throttle/quiet-fetch.ts). */
  'throttle-unmark': { keys: ['wait', 'prioritized', 'marker'], argv: [] },
  'throttle-demand': { keys: ['busy', 'global'], argv: ['lanePrefix', 'sample', 'laneIntervalUs'] },
  'throttle-lane': { keys: ['lane', 'laneQueue', 'waiting'], argv: ['now', 'laneId'] },
  'throttle-pause': { keys: ['lane', 'global', 'waiting', 'ready'], argv: ['now', 'pauseUs', 'scope', 'laneId', 'marginPpm'] },
  'throttle-limits': { keys: ['lane', 'waiting', 'ready'], argv: ['laneIntervalUs', 'burst', 'marginPpm', 'laneId', 'controlVersion'] },
  'throttle-reconcile': {
    keys: ['lane', 'laneOutgoing', 'global', 'waiting', 'ready'],
    argv: ['now', 'diff', 'laneIntervalUs', 'globalIntervalUs', 'marginPpm', 'horizonUs', 'laneId', 'quotas', 'slotUs'],
  },
  'upstream-learn': {
    keys: ['state'],
    argv: ['now', 'kind', 'configuredUs', 'floorUs', 'holdUs', 'lane', 'remaining', 'resetUs', 'startedUs', 'increaseSteps', 'shards', 'capPerSecond'],
  },
  'admin-lanes-page': { keys: ['busy'], argv: ['pageSize', 'afterDepth', 'afterLane'] },
  'admin-lane-resume': { keys: ['lane', 'waiting', 'ready', 'wake'], argv: ['now', 'laneId', 'marginPpm'] },
  'admin-override-end': { keys: ['overrides'], argv: ['lane', 'stored'] },
  'admin-cancel': {
    keys: ['lane', 'laneQueue', 'busy', 'waiting', 'job', 'lock', 'delayed', 'wait', 'paused', 'prioritized', 'completed', 'failed', 'events', 'ready'],
    argv: ['now', 'jobId', 'laneId', 'tenant'],
  },
} as const satisfies Record<string, ScriptShape>;

export type ScriptName = keyof typeof SCRIPT_TABLE;

/** The scripts, in table order. */
export const SCRIPT_NAMES = Object.keys(SCRIPT_TABLE) as ScriptName[];

type Shape<N extends ScriptName> = (typeof SCRIPT_TABLE)[N];
/** `{ [rest name]: V[] }` when the shape declares that tail, else nothing. */
type Tail<S, F extends 'keysRest' | 'argvRest', V> = S extends { readonly [K in F]: infer R extends string } ? { readonly [K in R]: readonly V[] } : unknown;

/** A script's KEYS by name (a declared tail is a list under its name). */
export type ScriptKeys<N extends ScriptName> = { readonly [K in Shape<N>['keys'][number]]: string } & Tail<Shape<N>, 'keysRest', string>;
/** A script's ARGV by name (a declared tail is a list under its name). */
export type ScriptArgv<N extends ScriptName> = { readonly [K in Shape<N>['argv'][number]]: ScriptArg } & Tail<Shape<N>, 'argvRest', ScriptArg>;

/** The scripts that also have a batched form: the decision scripts. */
export type BatchedScript = { [N in ScriptName]: Shape<N> extends { readonly batched: true } ? N : never }[ScriptName];

/** The shape of `name`, seen without its literal types. */
export function shapeOf(name: ScriptName): ScriptShape {
  return SCRIPT_TABLE[name];
}

/** Lays named values out in the order `names` gives, then the tail; a missing name is a programming error. */
function ordered<V>(script: string, what: string, names: readonly string[], values: object, rest: string | undefined): V[] {
  const byName = values as Readonly<Record<string, V | readonly V[] | undefined>>;
  const out: V[] = [];
  for (const n of names) {
    const v = byName[n];
    if (v === undefined) throw new SluiceError('SLUICE_ERR_SCRIPT', `${script}: ${what} '${n}' is missing`);
    out.push(v as V);
  }
  if (rest !== undefined) {
    const tail = byName[rest];
    if (!Array.isArray(tail)) throw new SluiceError('SLUICE_ERR_SCRIPT', `${script}: ${what} list '${rest}' is missing`);
    for (const v of tail as readonly V[]) out.push(v);
  }
  return out;
}

/**
 * Where a many-key script's batchShared names sit (1-based, as Lua counts), with the full KEYS and ARGV
 * counts a call must have for them to be shared; undefined when the script declares none.
 */
export interface BatchSharing {
  readonly keyCount: number;
  readonly argCount: number;
  /** 1-based positions of the shared KEYS and ARGV. */
  readonly sharedKeys: readonly number[];
  readonly sharedArgs: readonly number[];
  /** 1-based positions of the others, in order: what a call sends when it shares. */
  readonly ownKeys: readonly number[];
  readonly ownArgs: readonly number[];
}

export function batchSharing(name: ScriptName): BatchSharing | undefined {
  const s = shapeOf(name);
  if (!s.batchShared) return undefined;
  const at = (names: readonly string[], shared: readonly string[]) => {
    for (const n of shared) if (!names.includes(n)) throw new SluiceError('SLUICE_ERR_SCRIPT', `${name}: batchShared '${n}' is not one of its names`);
    const pos = names.map((_, i) => i + 1);
    return { shared: pos.filter((i) => shared.includes(names[i - 1]!)), own: pos.filter((i) => !shared.includes(names[i - 1]!)) };
  };
  const k = at(s.keys, s.batchShared.keys);
  const a = at(s.argv, s.batchShared.argv);
  return { keyCount: s.keys.length, argCount: s.argv.length, sharedKeys: k.shared, sharedArgs: a.shared, ownKeys: k.own, ownArgs: a.own };
}

/** `keys` as the positional KEYS array of `name`. */
export function keysOf<N extends ScriptName>(name: N, keys: ScriptKeys<N>): string[] {
  const s = shapeOf(name);
  return ordered<string>(name, 'key', s.keys, keys, s.keysRest);
}

/** `argv` as the positional ARGV array of `name`. */
export function argvOf<N extends ScriptName>(name: N, argv: ScriptArgv<N>): ScriptArg[] {
  const s = shapeOf(name);
  return ordered<ScriptArg>(name, 'argument', s.argv, argv, s.argvRest);
}
