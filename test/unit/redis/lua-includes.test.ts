// `-- @include` resolution: includes may include includes (each once, dependencies first), a cycle is a
// clear error, and every script the registry loads comes out with no include line left.
import { describe, expect, it } from 'vitest';
import { expandIncludes, resolveIncludes } from '../../../src/redis/lua-includes.js';
import { loadScripts } from '../../../src/redis/script-forms.js';

/** An include reader over an in-memory folder that records what was read. */
function folder(files: Record<string, string>) {
  const reads: string[] = [];
  const read = (name: string) => {
    reads.push(name);
    const text = files[name];
    if (text === undefined) throw new Error(`no include ${name}`);
    return text;
  };
  return { read, reads };
}

describe('lua includes', () => {
  it('resolves nested includes, dependencies first', () => {
    const { read } = folder({
      a: '-- @include b\nA\n',
      b: '-- @include c\nB\n',
      c: 'C\n',
    });
    expect(resolveIncludes('-- @include a\nBODY', read)).toEqual(['C\n', '\nB\n', '\nA\n']);
  });

  it('includes a shared include once (a diamond), each include file read once', () => {
    const { read, reads } = folder({
      now: 'NOW\n',
      lane: '-- @include now\nLANE\n',
      lease: '-- @include now\nLEASE\n',
    });
    const out = expandIncludes('-- header\n-- @include lane\n-- @include lease\n-- @include now\nbody()\n', read);
    expect(out.match(/NOW/g)).toHaveLength(1);
    expect(out.indexOf('NOW')).toBeLessThan(out.indexOf('LANE'));
    expect(out.indexOf('LANE')).toBeLessThan(out.indexOf('LEASE'));
    expect(out.indexOf('LEASE')).toBeLessThan(out.indexOf('body()'));
    expect(out.startsWith('-- header\n')).toBe(true);
    expect(out).not.toContain('@include');
    expect(reads.sort()).toEqual(['lane', 'lease', 'now']);
  });

  it('stops on a cycle with the path, instead of recursing forever', () => {
    const { read } = folder({ a: '-- @include b\n', b: '-- @include c\n', c: '-- @include a\n' });
    expect(() => resolveIncludes('-- @include a\n', read)).toThrow(expect.objectContaining({ code: 'SLUICE_ERR_SCRIPT', message: 'lua include cycle: a -> b -> c -> a' }));
    const self = folder({ x: '-- @include x\n' });
    expect(() => expandIncludes('-- @include x\n', self.read)).toThrow(/lua include cycle: x -> x/);
  });

  it('leaves a source without includes as it is', () => {
    const { read, reads } = folder({});
    expect(expandIncludes('return 1\n', read)).toBe('return 1\n');
    expect(reads).toEqual([]);
  });

  it('every loaded script, single and batched, has its includes expanded', () => {
    const scripts = loadScripts();
    expect(scripts.size).toBeGreaterThan(13);
    for (const s of scripts.values()) {
      expect(s.lua, s.name).not.toMatch(/^-- @include/m);
      // The clock include defines now_us once, whatever else is included.
      if (s.lua.includes('now_us(')) expect(s.lua.match(/function now_us/g), s.name).toHaveLength(1);
    }
  });
});
