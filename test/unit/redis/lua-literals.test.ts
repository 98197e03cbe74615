// No script gives redis.call a literal number: Redis turns every Lua number argument into text with
// snprintf('%.17g') (glibc's float formatting, ~2k instructions each), where a literal written as text
// ('0', '-1') costs nothing and sends the same bytes (docs/decisions/admit-and-park.md).
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { luaDir } from '../../../src/redis/script-forms.js';

/** The arguments of each `redis.call(...)` / `redis.pcall(...)` on `line` (one line each, as the scripts write them). */
function callArguments(line: string): string[][] {
  const out: string[][] = [];
  const code = line.replace(/--.*$/, '');
  for (const m of code.matchAll(/redis\.p?call\(/g)) {
    const args: string[] = [];
    let depth = 0;
    let current = '';
    let quote: string | undefined;
    for (let i = m.index! + m[0].length; i < code.length; i++) {
      const c = code[i]!;
      if (quote) {
        current += c;
        if (c === '\\') current += code[++i] ?? '';
        else if (c === quote) quote = undefined;
        continue;
      }
      if (c === "'" || c === '"') quote = c;
      if (c === '(' || c === '{' || c === '[') depth++;
      if (c === ')' || c === '}' || c === ']') {
        if (depth === 0) break;
        depth--;
      }
      if (c === ',' && depth === 0) {
        args.push(current.trim());
        current = '';
      } else current += c;
    }
    args.push(current.trim());
    out.push(args);
  }
  return out;
}

const isNumberLiteral = (arg: string) => /^-?\d+(\.\d+)?$/.test(arg);

function numberLiterals(source: string): string[] {
  const found: string[] = [];
  source.split('\n').forEach((line, i) => {
    for (const args of callArguments(line)) if (args.some(isNumberLiteral)) found.push(`${i + 1}: ${line.trim()}`);
  });
  return found;
}

describe('literal numbers given to redis.call', () => {
  it('are found by the check (its own cases)', () => {
    expect(numberLiterals("local x = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')")).toHaveLength(1);
    expect(numberLiterals("redis.call('ZADD', k, whole(f(1, 2)), '1') -- ZADD k 0 m")).toHaveLength(0);
    expect(numberLiterals("if redis.call('EXISTS', KEYS[4]) == 0 then return {0, 0} end")).toHaveLength(0);
    expect(numberLiterals("redis.call('LREM', k, '1', \"a,0\")")).toHaveLength(0);
  });

  it('appear in no script or include', () => {
    const dir = luaDir();
    const files = [...readdirSync(dir).map((f) => join(dir, f)), ...readdirSync(join(dir, 'includes')).map((f) => join(dir, 'includes', f))].filter((f) => f.endsWith('.lua'));
    expect(files.length).toBeGreaterThan(20);
    const offending = files.flatMap((f) => numberLiterals(readFileSync(f, 'utf8')).map((l) => `${f}:${l}`));
    expect(offending).toEqual([]);
  });
});
