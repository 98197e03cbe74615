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

/** A script's body as the Lua lines of `local function decide(KEYS, ARGV)`: how the batched form of a many-key script (throttle-admit) runs it once per call. */
export function asDecideFunction(source: string): string[] {
  return ['local function decide(KEYS, ARGV)', withoutIncludes(source), 'end'];
}

/**
 * The body of a one-key decision script that is one call of its include's decide function at offset 0
 * (`return decide_x(KEYS[1], ARGV, 0, ARGV[5] == '1')`, the record flag its fifth argument).
 */
const IN_PLACE_DECISION = /^return (decide_[a-z_]+)\(KEYS\[1\], ARGV, 0, ARGV\[5\] == '1'\)$/;

/**
 * The decide function a one-key decision script's body calls (IN_PLACE_DECISION): its batched forms
 * (src/redis/script-forms.ts, src/redis/node-batch.ts) call it at each decision's offset in ARGV, with
 * no table of the decision's arguments or key. A batched script whose body is anything else is an error
 * naming it.
 */
export function inPlaceDecision(name: string, source: string): string {
  const body = withoutIncludes(source)
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.startsWith('--'))
    .join('\n');
  const entry = IN_PLACE_DECISION.exec(body)?.[1];
  if (!entry) throw new SluiceError('SLUICE_ERR_SCRIPT', `lua/${name}.lua: a batched decision script's body must be \`return decide_<name>(KEYS[1], ARGV, 0, ARGV[5] == '1')\``);
  return entry;
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
