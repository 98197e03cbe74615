// The TS<->Lua seam: every lua/*.lua header names its KEYS and ARGV exactly as src/redis/script-table.ts
// does (names, order, count, variable tails), and the body reads no argument the header does not declare.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { luaDir } from '../../../src/redis/script-forms.js';
import { SCRIPT_NAMES, SCRIPT_TABLE, argvOf, keysOf, shapeOf, type ScriptName } from '../../../src/redis/script-table.js';

interface Declared {
  names: string[];
  /** The name of a `[n..]` tail, if the header declares one. */
  rest: string | undefined;
}

/** The `-- KEYS[i]  name: ...` / `-- ARGV[i]  name: ...` lines of the header (the leading comment block). */
function parseHeader(source: string): { keys: Declared; argv: Declared; returns: boolean } {
  const header: string[] = [];
  for (const line of source.split('\n')) {
    if (!line.startsWith('--')) break;
    header.push(line);
  }
  const out = { keys: { names: [] as string[], rest: undefined as string | undefined }, argv: { names: [] as string[], rest: undefined as string | undefined } };
  for (const line of header) {
    const m = /^-- (KEYS|ARGV)\[(\d+)(\.\.)?\]\s+([A-Za-z][A-Za-z0-9]*):\s/.exec(line);
    if (!m) {
      // Any other line naming an argument slot is malformed, not skipped.
      expect(line, 'a KEYS/ARGV line must read "-- KEYS[i]  name: description"').not.toMatch(/^-- (KEYS|ARGV)\[/);
      continue;
    }
    const d = m[1] === 'KEYS' ? out.keys : out.argv;
    expect(d.rest, `${line}: nothing may follow a [n..] tail`).toBeUndefined();
    expect(Number(m[2]), `${line}: slots are numbered 1, 2, ... in order`).toBe(d.names.length + 1);
    if (m[3]) d.rest = m[4]!;
    else d.names.push(m[4]!);
  }
  return { ...out, returns: header.some((l) => /^-- returns\b/.test(l)) };
}

/** The highest KEYS[i] / ARGV[i] the code (not the comments) reads. */
function usedSlots(source: string, table: 'KEYS' | 'ARGV'): Set<number> {
  const code = source
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('--'))
    .join('\n');
  return new Set([...code.matchAll(new RegExp(`${table}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1])));
}

const dir = luaDir();
const read = (name: string) => readFileSync(join(dir, `${name}.lua`), 'utf8');

/**
 * A decision script's algorithm is in its include lua/includes/decide-<name>.lua, functions of
 * (argv, o) with argv[o + 1 ..] = the script's ARGV (o = 0 in the script): its code, with argv[o + i]
 * read as ARGV[i], is the script's.
 */
function withDecideIncludes(source: string): string {
  const included = [...source.matchAll(/^-- @include (decide-[a-z-]+)$/gm)].map((m) =>
    readFileSync(join(dir, 'includes', `${m[1]}.lua`), 'utf8').replace(/\bargv\[o \+ (\d+)\]/g, 'ARGV[$1]'),
  );
  return [source, ...included].join('\n');
}

describe('script table against the lua/ headers', () => {
  it('lists exactly the scripts in lua/', () => {
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.lua'))
      .map((f) => f.slice(0, -4))
      .sort();
    expect([...SCRIPT_NAMES].sort()).toEqual(files);
  });

  it.each(SCRIPT_NAMES)('%s: header KEYS and ARGV match the table (names, order, count, tails)', (name) => {
    const shape = shapeOf(name);
    const h = parseHeader(read(name));
    expect(h.keys.names).toEqual(shape.keys);
    expect(h.keys.rest).toBe(shape.keysRest);
    expect(h.argv.names).toEqual(shape.argv);
    expect(h.argv.rest).toBe(shape.argvRest);
    expect(h.returns, 'the header says what the script returns').toBe(true);
  });

  it.each(SCRIPT_NAMES)('%s: the code reads every declared slot and none beyond them', (name) => {
    const shape = shapeOf(name);
    const source = withDecideIncludes(read(name));
    for (const [table, declared, rest] of [
      ['KEYS', shape.keys.length, shape.keysRest],
      ['ARGV', shape.argv.length, shape.argvRest],
    ] as const) {
      const used = usedSlots(source, table);
      for (let i = 1; i <= declared; i++) expect(used.has(i), `${name} never reads ${table}[${i}]`).toBe(true);
      // A tail is read by index arithmetic (KEYS[i + 4]); without one, nothing past the declared slots.
      if (rest === undefined) expect(Math.max(0, ...used), `${name} reads an undeclared ${table} slot`).toBeLessThanOrEqual(declared);
    }
  });

  it('batched scripts take one key, no tails, and the per-call arguments the Limiter fills', () => {
    const batched = SCRIPT_NAMES.filter((n) => shapeOf(n).batched);
    expect(batched.sort()).toEqual(['concurrency-acquire', 'fixed-window', 'gcra', 'sliding-counter', 'sliding-log', 'token-bucket']);
    for (const name of batched) {
      const s = shapeOf(name);
      expect(s.keys).toHaveLength(1);
      expect(s.keysRest).toBeUndefined();
      expect(s.argvRest).toBeUndefined();
      for (const callArg of ['now', 'cost', 'record']) expect(s.argv).toContain(callArg);
    }
  });
});

describe('arguments by name', () => {
  it('lays KEYS and ARGV out in table order, whatever the order of the object', () => {
    const argv = { marginPpm: 10, laneId: 'L', scope: 'lane', pauseUs: 5, now: '' };
    expect(argvOf('throttle-pause', argv)).toEqual(['', 5, 'lane', 'L', 10]);
    expect(keysOf('throttle-pause', { ready: 'r', waiting: 'w', global: 'g', lane: 'l' })).toEqual(['l', 'g', 'w', 'r']);
  });

  it('appends a declared tail after the named slots', () => {
    expect(keysOf('throttle-release', { ready: 'r', busy: 'b', lane: 'l', laneQueue: 'q', waiting: 'w', jobs: ['j1', 'j2'] })).toEqual(['l', 'q', 'b', 'w', 'r', 'j1', 'j2']);
    expect(argvOf('throttle-release', { now: '', laneId: 'L', mode: 'repair', members: ['a|1', 'b|2'] })).toEqual(['', 'L', 'repair', 'a|1', 'b|2']);
    expect(argvOf('throttle-release', { now: 7, laneId: 'L', mode: 'release', members: [] })).toEqual([7, 'L', 'release']);
  });

  it('refuses a missing name (a caller outside the type checker)', () => {
    const bad = { now: '', leaseMs: 10 } as unknown as Parameters<typeof argvOf<'concurrency-extend'>>[1];
    expect(() => argvOf('concurrency-extend', bad)).toThrow(/concurrency-extend: argument 'leaseId' is missing/);
    const noTail = { lane: 'l', laneQueue: 'q', busy: 'b', waiting: 'w', ready: 'r' } as unknown as Parameters<typeof keysOf<'throttle-release'>>[1];
    expect(() => keysOf('throttle-release', noTail)).toThrow(/key list 'jobs' is missing/);
  });

  it('every table entry is a script name the types know', () => {
    const names: ScriptName[] = Object.keys(SCRIPT_TABLE) as ScriptName[];
    expect(names).toEqual(SCRIPT_NAMES);
  });
});
