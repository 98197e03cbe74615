// The script registry: every file in lua/ read once, registered on a client with ioredis defineCommand
// under a versioned name, run by EVALSHA (ioredis falls back to EVAL on NOSCRIPT, so a Redis restart or
// SCRIPT FLUSH costs one extra round trip, never a failed decision).
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SluiceError } from '../errors.js';
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
] as const;

export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** Script arguments as Redis sees them. */
export type ScriptArg = string | number;

interface LoadedScript {
  name: string;
  command: string;
  lua: string;
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

/** Expands `-- @include name` lines with lua/includes/name.lua (one level, enough for shared helpers). */
function expandIncludes(source: string, dir: string): string {
  return source.replace(/^-- @include ([a-z0-9-]+)\s*$/gm, (_, name: string) =>
    readFileSync(join(dir, 'includes', `${name}.lua`), 'utf8'),
  );
}

/** Reads and versions every script once per process. */
export function loadScripts(): Map<string, LoadedScript> {
  if (loaded) return loaded;
  const dir = luaDir();
  const files = new Set(readdirSync(dir).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -4)));
  const map = new Map<string, LoadedScript>();
  for (const name of files) {
    const lua = expandIncludes(readFileSync(join(dir, `${name}.lua`), 'utf8'), dir);
    const version = createHash('sha1').update(lua).digest('hex').slice(0, 10);
    // The content hash in the name means two sluice versions sharing one Redis never run each other's code.
    map.set(name, { name, lua, command: `sluice_${name.replace(/-/g, '_')}_${version}` });
  }
  loaded = map;
  return map;
}

/** Runs the lua/ scripts on one client. Typed wrappers are its only callers. */
type ScriptCommand = (...args: ScriptArg[]) => Promise<unknown>;

export class ScriptRegistry {
  /** Script name -> the ioredis command function defineCommand made (looked up once, not per call). */
  private readonly commands = new Map<string, ScriptCommand>();

  constructor(private readonly client: RedisClient, names: readonly string[] = SCRIPT_NAMES) {
    const scripts = loadScripts();
    for (const name of names) {
      const s = scripts.get(name);
      if (!s) throw new SluiceError('SLUICE_ERR_SCRIPT', `lua/${name}.lua is missing`);
      // defineCommand without numberOfKeys: the key count is passed on every call.
      if (!(s.command in client)) client.defineCommand(s.command, { lua: s.lua });
      this.commands.set(name, (client as unknown as Record<string, ScriptCommand>)[s.command]!);
    }
  }

  /** EVALSHA `name` with `keys` and `args`; the reply is whatever the script returns. */
  run(name: string, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    const command = this.commands.get(name);
    if (!command) return Promise.reject(new SluiceError('SLUICE_ERR_SCRIPT', `script '${name}' is not registered`));
    return command.call(this.client, keys.length, ...keys, ...args);
  }
}
