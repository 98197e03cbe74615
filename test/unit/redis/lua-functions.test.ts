// How an include is read for a function library (src/redis/lua-functions.ts): definitions made once,
// per-run state put back to its start before every call, other statements run before every call, and
// anything that cannot be replayed from one line refused with the include's line.
import { describe, expect, it } from 'vitest';
import { functionLibrary, libraryInclude } from '../../../src/redis/lua-functions.js';

describe('libraryInclude', () => {
  it('replays per-run state and statements, not functions or constants', () => {
    const source = [
      '-- a comment',
      'if redis.replicate_commands then pcall(redis.replicate_commands) end',
      'local memo = {} -- per run',
      'local a, b',
      "local parked = { key = nil, text = '-- not a comment' }",
      'local LIMITS = {',
      '  fixed = 1,',
      '}',
      'local function f(x)',
      '  local inner = {}',
      '  return x',
      'end',
      'local function g() return 1 end',
      'local TOP = 4000',
      '',
    ].join('\n');
    const inc = libraryInclude(source, 'lua/includes/x.lua');
    expect(inc.perRun).toEqual([
      'if redis.replicate_commands then pcall(redis.replicate_commands) end',
      'memo = {}',
      'a, b = nil, nil',
      "parked = { key = nil, text = '-- not a comment' }",
    ]);
    // The statement runs per call only (at load time `redis` holds no command API); lines keep their numbers.
    expect(inc.text.split('\n')[1]).toBe('');
    expect(inc.text.split('\n')).toHaveLength(source.split('\n').length);
  });

  it.each([
    ['local memo = {\n  a = 1,\n}\n', 'lua/includes/x.lua:1: per-run state and statements must fit on one line'],
    ['local function f()\n  return 1\nend\n  stray()\n', 'lua/includes/x.lua:4: an indented line outside any function or constant'],
    ['local function f()\n  return 1\n', 'lua/includes/x.lua: ends inside a function or constant'],
    ['local LIMITS = {\n  a = 1,\n', 'lua/includes/x.lua: ends inside a function or constant'],
    ['local 1x = 2\n', 'lua/includes/x.lua:1: a local declaration this reader does not know'],
  ])('refuses %j', (source, message) => {
    expect(() => libraryInclude(source, 'lua/includes/x.lua')).toThrow(expect.objectContaining({ code: 'SLUICE_ERR_SCRIPT', message }));
  });
});

describe('functionLibrary', () => {
  it('names the function after the script and the hash of its text, resets state first, runs the body', () => {
    const parts = { includes: [{ name: 'x', text: 'local memo = {}\nlocal function f() return memo end' }], body: 'return #KEYS + #ARGV' };
    const lib = functionLibrary('batch:throttle-admit', parts);
    expect(lib.fn).toMatch(/^sluice_batch_throttle_admit_[0-9a-f]{16}$/);
    expect(lib.code.startsWith(`#!lua name=${lib.fn}\n`)).toBe(true);
    expect(lib.code).toContain('local function sluice_begin_run()\n  memo = {}\nend');
    expect(lib.code).toContain('local function sluice_body(KEYS, ARGV)\nreturn #KEYS + #ARGV\nend');
    expect(lib.code).toContain(`function_name='${lib.fn}', callback=function(KEYS, ARGV) sluice_begin_run() return sluice_body(KEYS, ARGV) end`);
    // Another text, another name: two sluice versions on one Redis never share a function.
    expect(functionLibrary('batch:throttle-admit', { ...parts, body: 'return 0' }).fn).not.toBe(lib.fn);
  });
});
