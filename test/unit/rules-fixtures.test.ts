// Rules-file failure classes kept as files (as Envoy keeps its config failures): each fixture under
// test/fixtures/rules/ is refused, and `<name>.expect` holds every `line:col path: message` it must
// produce — the exact lines `check-config` prints after `<file>:`. One table-driven test; a new
// failure class is a new pair of files.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isSluiceError } from '../../src/errors.js';
import { loadRules } from '../../src/index.js';

const DIR = fileURLToPath(new URL('../fixtures/rules/', import.meta.url));
const fixtures = readdirSync(DIR)
  .filter((f) => !f.endsWith('.expect'))
  .sort()
  .map((file) => {
    const expectFile = join(DIR, file.replace(/\.[^.]+$/, '.expect'));
    const expected = readFileSync(expectFile, 'utf8').split('\n').filter(Boolean);
    return [file, expected] as const;
  });

/** The issue lines of a refused file, without the file name (`line:col path: message`). */
function refusal(file: string): string[] {
  try {
    loadRules(file);
  } catch (e) {
    if (!isSluiceError(e, 'SLUICE_ERR_INVALID_RULES')) throw e;
    return e.message
      .split('\n')
      .filter((l) => l.startsWith(`${file}:`))
      .map((l) => l.slice(file.length + 1));
  }
  throw new Error(`${file} was accepted; a failure fixture must be refused`);
}

describe('rules-file failure fixtures: each class refused with its path:line:col message', () => {
  it('covers at least the known failure classes', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(15);
    for (const [, expected] of fixtures) expect(expected.length).toBeGreaterThan(0);
  });

  it.each(fixtures)('%s', (file, expected) => {
    const lines = refusal(join(DIR, file));
    expect(lines).toEqual(expected);
    for (const line of lines) expect(line).toMatch(/^\d+:\d+ \S+: \S/);
  });
});
