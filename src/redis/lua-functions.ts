// A script of lua/ as a Redis 7 function library (FUNCTION LOAD, then FCALL). Run by EVAL, a script
// makes every function and table of its includes again on every call: traced, ~40k of the ~330k Redis
// instructions of one admission (issue 12 item 3). In a library they are made once, when it is loaded;
// each call runs only the script's body (a function of KEYS and ARGV) after resetting the includes'
// per-run state. So the includes are read here, line by line, to tell state from definitions:
//   * `local function ...` up to its closing `end` at the line's start: made once;
//   * `local NAME = ...` with an upper-case name: a constant (may span lines), made once;
//   * any other `local names [= values]`: per-run state (a TIME cache, a batch's memos), declared once
//     and set to its initial values again before every call, exactly as an EVAL would start it;
//   * any other statement at the line's start: run before every call, as under EVAL.
// Per-run state and statements must fit on one line, so that they can be replayed: anything else is an
// error naming the include's line, caught by test/unit/lua-functions.test.ts for every script.
import { createHash } from 'node:crypto';
import { SluiceError } from '../errors.js';

/** A script as its includes (each `{ name, text }`, in dependency order) and its body. */
export interface ScriptParts {
  readonly includes: readonly { readonly name: string; readonly text: string }[];
  readonly body: string;
}

export interface FunctionLibrary {
  /** The function's name for FCALL: also the library's; it carries the text's hash, so two sluice versions never share one. */
  readonly fn: string;
  /** The text for FUNCTION LOAD. */
  readonly code: string;
}

const CONSTANT = /^local ([A-Z][A-Z0-9_]*(?:\s*,\s*[A-Z][A-Z0-9_]*)*)\s*=/;
const STATE = /^local ([A-Za-z_][A-Za-z0-9_]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*)\s*(?:=\s*(.*))?$/;

/**
 * Calls `visit(c, i)` for each character of `text` outside a quoted string, until it returns true;
 * returns that index, or -1.
 */
function scanCode(text: string, visit: (c: string, i: number) => boolean): number {
  let quote: string | undefined;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (visit(c, i)) return i;
  }
  return -1;
}

/** The line without a trailing `-- comment` (outside strings, as far as a line-based reading can tell). */
function code(line: string): string {
  const at = scanCode(line, (c, i) => c === '-' && line[i + 1] === '-');
  return (at < 0 ? line : line.slice(0, at)).trimEnd();
}

/** Brackets opened and not closed on `text` (strings skipped). */
function openBrackets(text: string): number {
  let depth = 0;
  scanCode(text, (c) => {
    if (c === '{' || c === '(' || c === '[') depth++;
    else if (c === '}' || c === ')' || c === ']') depth--;
    return false;
  });
  return depth;
}

/** An include read for a library: what is replayed before each call, and its text to load once. */
export interface LibraryInclude {
  /** Statements that put its per-run state back to its start, and its other statements at the line's start. */
  readonly perRun: string[];
  /** Its text without those other statements (they run at each call, not when the library is loaded). */
  readonly text: string;
}

/** Reads an include for a library (see the top of this file). `where` names the include in errors. */
export function libraryInclude(source: string, where: string): LibraryInclude {
  const out: string[] = [];
  const lines = source.split('\n');
  let inFunction = false;
  let constantDepth = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = code(lines[i]!);
    if (constantDepth > 0) {
      constantDepth += openBrackets(line);
      continue;
    }
    if (inFunction) {
      if (line === 'end') inFunction = false;
      continue;
    }
    if (line === '' || /^\s/.test(line)) {
      if (line !== '') throw new SluiceError('SLUICE_ERR_SCRIPT', `${where}:${i + 1}: an indented line outside any function or constant`);
      continue;
    }
    if (line.startsWith('local function ')) {
      // A one-line function (`local function f() ... end`) closes itself.
      if (!/\bend$/.test(line)) inFunction = true;
      continue;
    }
    if (CONSTANT.test(line)) {
      constantDepth = openBrackets(line);
      continue;
    }
    if (openBrackets(line) !== 0) throw new SluiceError('SLUICE_ERR_SCRIPT', `${where}:${i + 1}: per-run state and statements must fit on one line`);
    const state = STATE.exec(line);
    if (state) {
      const names = state[1]!.split(',').map((n) => n.trim());
      out.push(`${names.join(', ')} = ${state[2] ?? names.map(() => 'nil').join(', ')}`);
    } else if (line.startsWith('local ')) {
      throw new SluiceError('SLUICE_ERR_SCRIPT', `${where}:${i + 1}: a local declaration this reader does not know`);
    } else {
      out.push(line);
      lines[i] = '';
    }
  }
  if (inFunction || constantDepth > 0) throw new SluiceError('SLUICE_ERR_SCRIPT', `${where}: ends inside a function or constant`);
  return { perRun: out, text: lines.join('\n') };
}

/** Function and library name for `script` (`batch:throttle-admit` -> sluice_batch_throttle_admit_<hash>). */
function functionName(script: string, hash: string): string {
  return `sluice_${script.replace(/[^A-Za-z0-9]+/g, '_')}_${hash}`;
}

/**
 * `parts` of script `script` as a function library. The body runs as it would under EVAL: KEYS and
 * ARGV are its parameters, the includes' per-run state is back at its start. Flags: cross-slot keys
 * allowed as an EVAL without a shebang allows them (a cluster still routes a call by its keys).
 */
export function functionLibrary(script: string, parts: ScriptParts): FunctionLibrary {
  const includes = parts.includes.map((inc) => libraryInclude(inc.text, `lua/includes/${inc.name}.lua`));
  const rest = [
    'local function sluice_begin_run()',
    ...includes.flatMap((inc) => inc.perRun).map((s) => `  ${s}`),
    'end',
    'local function sluice_body(KEYS, ARGV)',
    parts.body,
    'end',
  ];
  const text = [...includes.map((inc) => inc.text), ...rest].join('\n');
  const fn = functionName(script, createHash('sha1').update(text).digest('hex').slice(0, 16));
  const register = `redis.register_function{function_name='${fn}', callback=function(KEYS, ARGV) sluice_begin_run() return sluice_body(KEYS, ARGV) end, flags={'allow-cross-slot-keys'}}`;
  return { fn, code: [`#!lua name=${fn}`, text, register].join('\n') };
}
