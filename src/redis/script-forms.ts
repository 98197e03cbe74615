// The scripts' forms: every file in lua/ read once per process, its includes expanded, with the batched
// forms of the decision scripts (many decisions of one turn in one call, src/redis/scripts.ts) and of the
// many-key scripts, the cluster form of each (one call per master, src/redis/node-batch.ts), and each as
// a Redis 7 function library (src/redis/lua-functions.ts). What the registry runs; nothing here talks to Redis.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SluiceError } from '../errors.js';
import { asDecideFunction, expandIncludes, inPlaceDecision, resolveNamedIncludes, withoutIncludes } from './lua-includes.js';
import { functionLibrary, type ScriptParts } from './lua-functions.js';
import { nodeBatchedLua, nodeBatchedManyLua } from './node-batch.js';
import { SCRIPT_NAMES, batchSharing, shapeOf, type BatchSharing, type ScriptName } from './script-table.js';

export interface LoadedScript {
  name: string;
  lua: string;
  /** SHA-1 of `lua`: what EVALSHA names, so two sluice versions sharing one Redis never run each other's code. */
  sha: string;
  /** The same script as a function library (src/redis/lua-functions.ts): its function's name for FCALL, and its code. */
  fn: string;
  library: string;
}

let loaded: Map<string, LoadedScript> | undefined;

/** Finds the package's lua/ folder by walking up from this module (works from src/ and from dist/src/). */
export function luaDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'lua');
    if (existsSync(join(candidate, 'includes'))) return candidate;
    dir = dirname(dir);
  }
  throw new SluiceError('SLUICE_ERR_SCRIPT', 'cannot find the lua/ folder next to the sluice package');
}

/** Reads lua/includes/<name>.lua; an unknown include is a clear error. */
function includeReader(dir: string): (name: string) => string {
  return (name) => {
    const file = join(dir, 'includes', `${name}.lua`);
    if (!existsSync(file)) throw new SluiceError('SLUICE_ERR_SCRIPT', `lua/includes/${name}.lua is missing`);
    return readFileSync(file, 'utf8');
  };
}

/**
 * The decision scripts that also exist in a batched form: one KEYS[1], a fixed number of ARGV, and a
 * reply per call. Several decisions issued in the same turn of the event loop then go to Redis as ONE script call.
 */
export const BATCHED_SCRIPTS: ReadonlySet<string> = new Set(SCRIPT_NAMES.filter((name) => shapeOf(name).batched));

/** Name of the batched form of `name` in the loaded map. */
export const batchName = (name: string) => `batch:${name}`;
/** Name of the cluster form of a decision script: a batch of decisions whose keys one master serves (src/redis/node-batch.ts). */
export const nodeBatchName = (name: string) => `nodes:${name}`;

/**
 * The batched form of a decision script: its body's decide function (its one statement, src/redis/lua-includes.ts
 * inPlaceDecision) called once per decision, in order, at that decision's offset. ARGV[1] = arguments
 * per decision; then each decision's arguments; KEYS[i] is the key of decision i. Returns the list of the single script's replies. Every decision stays atomic (the
 * batch is one script) and sees the state the decisions before it left, exactly as separate calls would.
 */
function batchedLua(name: string, source: string, read: (name: string) => string): ScriptParts {
  // The includes (helpers, the TIME cache) are made once per batch. Each decision calls its include's
  // decide function where its arguments lie in ARGV: no table of them, nor of its key, per decision.
  // With string states (lua/includes/state-cache.lua), the cache begins at the first call on the key
  // of the call before it: a batch of distinct keys runs as it did without one.
  const entry = inPlaceDecision(name, source);
  const cached = keepsStringStates(source, read);
  return {
    includes: resolveNamedIncludes(source, read),
    body: [
      'local per_call = tonumber(ARGV[1])',
      'local replies = {}',
      ...(cached ? ['local last'] : []),
      'for i = 1, #KEYS do',
      '  local base = 1 + (i - 1) * per_call',
      '  local key = KEYS[i]',
      ...(cached ? ['  if key == last and not held_value then begin_states(last) end', '  last = key'] : []),
      `  replies[i] = ${entry}(key, ARGV, base, ARGV[base + 5] == '1')`,
      'end',
      ...(cached ? ['flush_states()'] : []),
      'return replies',
    ].join('\n'),
  };
}

/** Whether the decisions of `source` keep string states through lua/includes/state-cache.lua. */
function keepsStringStates(source: string, read: (name: string) => string): boolean {
  return resolveNamedIncludes(source, read).some((inc) => inc.name === 'state-cache');
}

/**
 * `loop` (a batch's calls, one after the other) between begin_states() and flush_states() when the
 * script's decisions keep string states (lua/includes/state-cache.lua): each key read once and written
 * once per batch, however many of its calls touch it (a batch that ends in an error writes none of the
 * states it held, where its earlier calls' SETs used to stay: the client fails all its calls alike).
 * Only the forms for one node: a cluster's node batch (src/redis/node-batch.ts) runs each call under
 * pcall and must leave nothing of a call that failed, which one cache shared by its calls would not
 * guarantee without more care; it keeps a GET and a SET per call.
 */
function withStateCache(source: string, read: (name: string) => string, loop: readonly string[]): string[] {
  if (!keepsStringStates(source, read)) return [...loop];
  return ['begin_states()', ...loop, 'flush_states()'];
}

/**
 * Scripts of several keys that also exist in a batched form: calls issued in one turn of the event loop
 * go as one script call, each still atomic on its own (the all-or-nothing decisions of many requests,
 * src/limiters/all-or-nothing.ts; the throttle admissions of many submits, src/throttle/lane-scripts.ts).
 * One node only.
 */
export const MANY_KEY_BATCHED: ReadonlySet<string> = new Set(['limits', 'throttle-admit']);

/**
 * Many-key scripts whose body is one call of an include's function that takes a call's place in KEYS
 * and ARGV, `f(KEYS, ARGV, keyOffset, argOffset, keyCount)`, and returns the call's reply and the
 * offset of its last argument: their batched form calls it in place, without copying each call's keys
 * and arguments into tables of their own (~1.5 µs of Redis CPU per three-limit call, a tenth of it),
 * and without argument counts (the function knows where a call's arguments end).
 * A call whose arguments are exactly the previous call's (the requests of one rule set at one cost:
 * every policy argument, the time argument and the cost the same) sends none: its key count goes
 * negative and the function reads the previous call's arguments where they are (`repeatsArgs`).
 */
const IN_PLACE_ENTRY: Readonly<Record<string, string>> = { limits: 'decide_limits' };

/** True when the batched form of `name` takes no argument counts (IN_PLACE_ENTRY). */
export function countsArguments(name: string): boolean {
  return IN_PLACE_ENTRY[name] === undefined;
}

/**
 * The batched form of a many-key script: its body becomes a function of (KEYS, ARGV) run once per call
 * (or its IN_PLACE_ENTRY function is called at each call's offsets).
 * ARGV[1] = m calls; ARGV[2..m+1] = each call's key count, ARGV[m+2..2m+1] its argument count (not for
 * an IN_PLACE_ENTRY script); then the calls' arguments one after the other; KEYS are the calls' keys
 * one after the other. An IN_PLACE_ENTRY call answered with an error fails the whole batch; its key
 * count is negative when it sends no arguments and repeats the previous call's (repeatsArgs).
 * A script that declares batchShared names (src/redis/script-table.ts) has a second form of call: counts
 * 0 and 0 say the call has the full KEYS and ARGV and repeats the previous call's at the shared names, so
 * only its own keys and arguments are sent (a throttle's admissions: 4 keys and 9 arguments instead of 12
 * and 22). The previous call's tables are reused with its own positions overwritten (the script only
 * reads its KEYS and ARGV), unrolled: no per-position test.
 */
function batchedManyLua(name: string, source: string, read: (name: string) => string, sharing?: BatchSharing): ScriptParts {
  const entry = IN_PLACE_ENTRY[name];
  if (entry) {
    // The batch runs the entry, not the body: the body must be exactly that call, for one call.
    const body = withoutIncludes(source)
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('--'));
    if (body.join('\n') !== `return ${entry}(KEYS, ARGV, 0, 0, #KEYS)`) throw new SluiceError('SLUICE_ERR_SCRIPT', `lua/${name}.lua: its body must be \`return ${entry}(KEYS, ARGV, 0, 0, #KEYS)\``);
    if (sharing) throw new SluiceError('SLUICE_ERR_SCRIPT', `lua/${name}.lua: a script decided in place cannot share batch arguments`);
  }
  const own = sharing
    ? [
        ...sharing.ownKeys.map((p, i) => `    keys[${p}] = KEYS[k + ${i + 1}]`),
        ...sharing.ownArgs.map((p, i) => `    argv[${p}] = ARGV[a + ${i + 1}]`),
        `    k, a = k + ${sharing.ownKeys.length}, a + ${sharing.ownArgs.length}`,
      ]
    : [];
  const call = entry
    ? [
        // A negative key count: the call repeats the arguments of the previous call that sent its own
        // (they start after offset `pa`); `a` stays where the sent arguments end.
        '  local nk = tonumber(ARGV[1 + i])',
        '  local reply, last',
        '  if nk < 0 then',
        '    nk = -nk',
        `    reply, last = ${entry}(KEYS, ARGV, k, pa, nk)`,
        '  else',
        `    reply, last = ${entry}(KEYS, ARGV, k, a, nk)`,
        '    if last then pa, a = a, last end',
        '  end',
        '  if not last then return reply end',
        '  replies[i] = reply',
        '  k = k + nk',
      ]
    : [
        '  local nk, na = tonumber(ARGV[1 + i]), tonumber(ARGV[1 + m + i])',
        ...(sharing ? ['  if nk == 0 and na == 0 and i > 1 then', ...own, '  else'] : []),
        '    keys, argv = {}, {}',
        '    for j = 1, nk do keys[j] = KEYS[k + j] end',
        '    for j = 1, na do argv[j] = ARGV[a + j] end',
        '    k, a = k + nk, a + na',
        ...(sharing ? ['  end'] : []),
        '  replies[i] = decide(keys, argv)',
      ];
  return {
    includes: resolveNamedIncludes(source, read),
    body: [
      ...(entry ? [] : asDecideFunction(source)),
      'local m = tonumber(ARGV[1])',
      'local replies = {}',
      `local k, a = 0, ${entry ? '1 + m' : '1 + 2 * m'}`,
      ...(entry ? ['local pa = a'] : []),
      'local keys, argv',
      ...withStateCache(source, read, ['for i = 1, m do', ...call, 'end']),
      'return replies',
    ].join('\n'),
  };
}

/** Reads and versions every script once per process. */
export function loadScripts(): Map<string, LoadedScript> {
  if (loaded) return loaded;
  const dir = luaDir();
  const read = includeReader(dir);
  const files = new Set(readdirSync(dir).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -4)));
  const map = new Map<string, LoadedScript>();
  const add = (name: string, lua: string, parts: ScriptParts) => {
    const { fn, code } = functionLibrary(name, parts);
    map.set(name, { name, lua, sha: createHash('sha1').update(lua).digest('hex'), fn, library: code });
  };
  // The EVAL text: the includes, then the body (a plain script's includes stand where its first include line was).
  const joined = (parts: ScriptParts) => [...parts.includes.map((inc) => inc.text), parts.body].join('\n');
  for (const name of files) {
    const source = readFileSync(join(dir, `${name}.lua`), 'utf8');
    add(name, expandIncludes(source, read), { includes: resolveNamedIncludes(source, read), body: withoutIncludes(source) });
    if (BATCHED_SCRIPTS.has(name)) {
      const parts = batchedLua(name, source, read);
      add(batchName(name), joined(parts), parts);
      const byNode = nodeBatchedLua(name, source, read);
      add(nodeBatchName(name), joined(byNode), byNode);
    }
    if (MANY_KEY_BATCHED.has(name)) {
      const parts = batchedManyLua(name, source, read, batchSharing(name as ScriptName));
      add(batchName(name), joined(parts), parts);
      const entry = IN_PLACE_ENTRY[name];
      if (entry) {
        const byNode = nodeBatchedManyLua(entry, source, read);
        add(nodeBatchName(name), joined(byNode), byNode);
      }
    }
  }
  loaded = map;
  return map;
}
