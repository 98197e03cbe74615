// The sluice program: the command registry, help, usage errors, and the bin file.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../../../src/cli/commands.js';
import { cli, MAIN } from './run-helper.js';

describe('sluice', () => {
  it('registers its commands in one place', () => {
    expect(COMMANDS.map((c) => c.name)).toEqual(['serve', 'worker', 'dev', 'check-config', 'simulate', 'admin']);
  });

  it('--help lists every registered command', async () => {
    const r = await cli('--help');
    expect(r.code).toBe(0);
    for (const c of COMMANDS) expect(r.stdout).toContain(c.name);
  });

  it('an unknown command is a usage error (exit 2)', async () => {
    const r = await cli('frobnicate');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'frobnicate'");
  });

  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    const r = await cli('--version');
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('the bin starts with a node shebang', () => {
    expect(readFileSync(MAIN, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
  });
});
