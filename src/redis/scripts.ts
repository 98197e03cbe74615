// The script registry: every file in lua/ read once, run by EVALSHA of its content hash; a NOSCRIPT reply
// (Redis restarted, SCRIPT FLUSH) is answered by sending the same call once as EVAL, which loads it:
// one extra round trip, never a failed decision. Not ioredis defineCommand: every defined command
// costs every ioredis (auto-)pipeline a copy of itself (docs/decisions/registry-without-definecommand.md).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SluiceError } from '../errors.js';
import { Cluster } from 'ioredis';
import type { RedisClient } from './connection.js';

/** The scripts in lua/ (file name without `.lua`). Adding a file means adding its name here. */
export const SCRIPT_NAMES = [
  'fixed-window',
  'sliding-log',
  'sliding-counter',
  'token-bucket',
  'gcra',
  'concurrency-acquire',
  'concurrency-release',
  'concurrency-extend',
  'throttle-admit',
  'throttle-start',
  'throttle-release',
  'throttle-lane',
  'throttle-pause',
  'admin-lanes-page',
  'admin-lane-resume',
  'admin-cancel',
] as const;

export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** Script arguments as Redis sees them. */
export type ScriptArg = string | number;

interface LoadedScript {
  name: string;
  lua: string;
  /** SHA-1 of `lua`: what EVALSHA names, so two sluice versions sharing one Redis never run each other's code. */
  sha: string;
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

const INCLUDE_LINE = /^-- @include ([a-z0-9-]+)\s*$/gm;

/** Expands `-- @include name` lines with lua/includes/name.lua (one level, enough for shared helpers). */
function expandIncludes(source: string, dir: string): string {
  return source.replace(INCLUDE_LINE, (_, name: string) => readFileSync(join(dir, 'includes', `${name}.lua`), 'utf8'));
}

/**
 * The decision scripts that also exist in a batched form: one KEYS[1], a fixed number of ARGV, and a
 * reply per call. Several decisions issued in the same tick then go to Redis as ONE script call.
 */
export const BATCHED_SCRIPTS: ReadonlySet<string> = new Set(['fixed-window', 'sliding-log', 'sliding-counter', 'token-bucket', 'gcra', 'concurrency-acquire']);

/** Name of the batched form of `name` in the loaded map. */
const batchName = (name: string) => `batch:${name}`;

/**
 * The most decisions one batched call carries. Redis runs them back to back, so a batch blocks other
 * clients for about MAX_BATCH x 5 µs; 8 to 64 measured alike in throughput, 32 and 64 cost the least CPU.
 */
export const MAX_BATCH = 32;

/**
 * The batched form of a decision script: its whole body becomes a function of (KEYS, ARGV) run once per
 * decision, in order. ARGV[1] = arguments per decision; then each decision's arguments; KEYS[i] is the
 * key of decision i. Returns the list of the single script's replies. Every decision stays atomic (the
 * batch is one script) and sees the state the decisions before it left, exactly as separate calls would.
 */
function batchedLua(source: string, dir: string): string {
  // The includes (helpers, the TIME cache) go outside the per-decision function: made once per batch.
  const includes = [...source.matchAll(INCLUDE_LINE)].map((m) => readFileSync(join(dir, 'includes', `${m[1]}.lua`), 'utf8'));
  return [
    ...includes,
    'local function decide(KEYS, ARGV)',
    source.replace(INCLUDE_LINE, ''),
    'end',
    'local per_call = tonumber(ARGV[1])',
    'local replies = {}',
    'for i = 1, #KEYS do',
    '  local argv = {}',
    '  local base = 1 + (i - 1) * per_call',
    '  for j = 1, per_call do argv[j] = ARGV[base + j] end',
    '  replies[i] = decide({KEYS[i]}, argv)',
    'end',
    'return replies',
  ].join('\n');
}

/** Reads and versions every script once per process. */
export function loadScripts(): Map<string, LoadedScript> {
  if (loaded) return loaded;
  const dir = luaDir();
  const files = new Set(readdirSync(dir).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -4)));
  const map = new Map<string, LoadedScript>();
  const add = (name: string, lua: string) => {
    map.set(name, { name, lua, sha: createHash('sha1').update(lua).digest('hex') });
  };
  for (const name of files) {
    const source = readFileSync(join(dir, `${name}.lua`), 'utf8');
    add(name, expandIncludes(source, dir));
    if (BATCHED_SCRIPTS.has(name)) add(batchName(name), batchedLua(source, dir));
  }
  loaded = map;
  return map;
}

/** One decision waiting to be sent, alone or with others of the same script. */
export interface BatchableCall {
  readonly key: string;
  readonly args: readonly ScriptArg[];
  onReply(reply: unknown): void;
  onError(error: unknown): void;
}

/** Only NOSCRIPT is ever matched by error text (style.md). */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Runs the lua/ scripts on one client. Typed wrappers are its only callers. */
export class ScriptRegistry {
  private readonly scripts = new Map<string, LoadedScript>();
  /** Calls waiting for the end of the tick, per batched script. */
  private readonly queues = new Map<string, BatchableCall[]>();

  constructor(private readonly client: RedisClient, names: readonly string[] = SCRIPT_NAMES) {
    const loaded = loadScripts();
    const use = (name: string) => {
      const s = loaded.get(name);
      if (!s) throw new SluiceError('SLUICE_ERR_SCRIPT', `lua/${name}.lua is missing`);
      this.scripts.set(name, s);
    };
    for (const name of names) {
      use(name);
      // On a cluster the keys of one batch would span slots: there every decision is its own call.
      if (BATCHED_SCRIPTS.has(name) && !(client instanceof Cluster)) use(batchName(name));
    }
  }

  /** EVALSHA `name` with `keys` and `args` (EVAL once on NOSCRIPT); the reply is whatever the script returns. */
  run(name: string, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    const s = this.scripts.get(name);
    if (!s) return Promise.reject(new SluiceError('SLUICE_ERR_SCRIPT', `script '${name}' is not registered`));
    return this.client.evalsha(s.sha, keys.length, ...keys, ...args).catch((error: unknown) => {
      if (!isNoScript(error)) throw error;
      return this.client.eval(s.lua, keys.length, ...keys, ...args);
    });
  }

  /**
   * Sends a one-key decision: at the end of the current tick, together with the other decisions of the
   * same script issued in this tick (in issue order), as one script call; alone when nothing joined it.
   * The client must be ready (the caller checks, so nothing ever waits in an offline queue).
   */
  submit(name: string, call: BatchableCall): void {
    if (!this.scripts.has(batchName(name))) {
      this.send(name, [call]);
      return;
    }
    let queue = this.queues.get(name);
    if (!queue) {
      queue = [];
      this.queues.set(name, queue);
    }
    queue.push(call);
    if (queue.length === 1) process.nextTick(() => this.flush(name));
  }

  private flush(name: string): void {
    const queue = this.queues.get(name);
    if (!queue?.length) return;
    this.queues.set(name, []);
    for (let i = 0; i < queue.length; i += MAX_BATCH) this.send(name, i === 0 && queue.length <= MAX_BATCH ? queue : queue.slice(i, i + MAX_BATCH));
  }

  private send(name: string, calls: readonly BatchableCall[]): void {
    const single = calls.length === 1;
    const s = this.scripts.get(single ? name : batchName(name))!;
    const keys: string[] = [];
    const args: ScriptArg[] = single ? [...calls[0]!.args] : [calls[0]!.args.length];
    for (const call of calls) {
      keys.push(call.key);
      if (!single) for (const a of call.args) args.push(a);
    }
    const deliver = (reply: unknown) => {
      if (single) calls[0]!.onReply(reply);
      else for (let i = 0; i < calls.length; i++) calls[i]!.onReply((reply as unknown[])[i]);
    };
    const fail = (error: unknown) => {
      for (const call of calls) call.onError(error);
    };
    try {
      this.client.evalsha(s.sha, keys.length, ...keys, ...args).then(deliver, (error: unknown) => {
        // The script is not in this server's cache: it did not run, so sending it once as EVAL is safe.
        if (isNoScript(error)) this.client.eval(s.lua, keys.length, ...keys, ...args).then(deliver, fail);
        else fail(error);
      });
    } catch (error) {
      fail(error);
    }
  }
}
