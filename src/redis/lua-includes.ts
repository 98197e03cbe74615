// `-- @include name` lines of the lua/ scripts: resolved to lua/includes/name.lua, recursively (an include
// may include others), each include once, in dependency order, and a cycle is an error, never a hang.
import { SluiceError } from '../errors.js';

/** One `-- @include name` line (a whole line; the name is a file in lua/includes/ without `.lua`). */
export const INCLUDE_LINE = /^-- @include ([a-z0-9-]+)[ \t]*\r?$/gm;

/** The include names a source asks for, in order. */
function includesOf(source: string): string[] {
  return [...source.matchAll(INCLUDE_LINE)].map((m) => m[1]!);
}

/** A source with its include lines taken out. */
export function withoutIncludes(source: string): string {
  return source.replace(INCLUDE_LINE, '');
}

/** A script's body as the Lua lines of `local function decide(KEYS, ARGV)`: how a batched form runs it once per call. */
export function asDecideFunction(source: string): string[] {
  return ['local function decide(KEYS, ARGV)', withoutIncludes(source), 'end'];
}

/**
 * A batched form of one-key decision script `source`: its includes (made once per batch), `decide`,
 * `per_call` (ARGV[1]: arguments per decision) and `replies`, then `loop` (which fills `replies`), then
 * `return replies`.
 */
export function decideEachParts(source: string, read: (name: string) => string, loop: readonly string[]): { includes: { name: string; text: string }[]; body: string } {
  return {
    includes: resolveNamedIncludes(source, read),
    body: [...asDecideFunction(source), 'local per_call = tonumber(ARGV[1])', 'local replies = {}', ...loop, 'return replies'].join('\n'),
  };
}

/**
 * The includes `source` needs, transitively: each one once, every include after the includes it asks
 * for (so what it defines is defined before use), as their sources with their own include lines taken
 * out. `read(name)` gives the text of lua/includes/<name>.lua.
 */
export function resolveIncludes(source: string, read: (name: string) => string): string[] {
  return resolveNamedIncludes(source, read).map((inc) => inc.text);
}

/** `resolveIncludes` with each include's name beside its text. */
export function resolveNamedIncludes(source: string, read: (name: string) => string): { name: string; text: string }[] {
  const done = new Set<string>();
  const out: { name: string; text: string }[] = [];
  const visit = (name: string, path: readonly string[]) => {
    if (path.includes(name)) {
      throw new SluiceError('SLUICE_ERR_SCRIPT', `lua include cycle: ${[...path, name].join(' -> ')}`);
    }
    if (done.has(name)) return;
    const text = read(name);
    for (const inner of includesOf(text)) visit(inner, [...path, name]);
    done.add(name);
    out.push({ name, text: withoutIncludes(text) });
  };
  for (const name of includesOf(source)) visit(name, []);
  return out;
}

/**
 * `source` with its includes expanded in place of its first include line (the rest of its include
 * lines removed): every include exactly once, before the code that follows the header.
 */
export function expandIncludes(source: string, read: (name: string) => string): string {
  const includes = resolveIncludes(source, read);
  if (includes.length === 0) return source;
  let first = true;
  return source.replace(INCLUDE_LINE, () => {
    if (!first) return '';
    first = false;
    return includes.join('\n');
  });
}
