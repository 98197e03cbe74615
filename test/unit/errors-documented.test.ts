// docs/errors.md against src/errors.ts: every code of ERROR_CODES has a row in the doc's table with
// its HTTP status and a section of its own, and the doc names no code that does not exist.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.js';

const DOC = new URL('../../docs/errors.md', import.meta.url);

/** A table row: | `SLUICE_ERR_X` | 500 | ... */
const ROW = /^\|\s*`(SLUICE_ERR_[A-Z0-9_]+)`\s*\|\s*(\d{3})\s*\|/gm;
/** A section heading: ### `SLUICE_ERR_X` */
const SECTION = /^###\s+`(SLUICE_ERR_[A-Z0-9_]+)`\s*$/gm;
/** Any mention of a code, anywhere. */
const MENTION = /SLUICE_ERR_[A-Z0-9_]+/g;

/** Every way `doc` disagrees with `codes`, as readable lines (empty when it agrees). */
function problemsOf(doc: string, codes: Readonly<Record<string, { httpStatus: number }>>): string[] {
  const problems: string[] = [];
  const rows = new Map<string, number>();
  for (const [, code, status] of doc.matchAll(ROW)) {
    if (rows.has(code!)) problems.push(`${code}: more than one table row`);
    rows.set(code!, Number(status));
  }
  const sections = [...doc.matchAll(SECTION)].map((m) => m[1]!);
  for (const [code, { httpStatus }] of Object.entries(codes)) {
    if (!rows.has(code)) problems.push(`${code}: no table row`);
    else if (rows.get(code) !== httpStatus) problems.push(`${code}: documented HTTP ${rows.get(code)}, ERROR_CODES says ${httpStatus}`);
    const n = sections.filter((s) => s === code).length;
    if (n !== 1) problems.push(`${code}: ${n} sections (expected 1)`);
  }
  for (const mention of new Set(doc.match(MENTION) ?? [])) {
    if (!(mention in codes)) problems.push(`${mention}: documented but not in ERROR_CODES`);
  }
  return problems;
}

describe('docs/errors.md', () => {
  const doc = readFileSync(DOC, 'utf8');

  it('documents every code of ERROR_CODES with its HTTP status, and no other code', () => {
    expect(problemsOf(doc, ERROR_CODES)).toEqual([]);
    expect([...doc.matchAll(ROW)].length).toBe(Object.keys(ERROR_CODES).length);
  });

  it('gives every code a When, a What to do and an Example', () => {
    const bodies = doc.split(/^###\s+/m).slice(1);
    expect(bodies.length).toBe(Object.keys(ERROR_CODES).length);
    for (const body of bodies) {
      const code = body.slice(0, body.indexOf('\n'));
      for (const part of ['**When.**', '**What to do.**', '**Example.**']) {
        expect(body.includes(part), `${code} lacks ${part}`).toBe(true);
      }
    }
  });

  // The checker itself: each kind of drift is caught.
  describe('the check catches drift', () => {
    const codes = { SLUICE_ERR_A: { httpStatus: 400 }, SLUICE_ERR_B: { httpStatus: 503 } };
    const good = ['| `SLUICE_ERR_A` | 400 | x |', '| `SLUICE_ERR_B` | 503 | y |', '### `SLUICE_ERR_A`', '### `SLUICE_ERR_B`', ''].join('\n');

    it('accepts a matching doc', () => {
      expect(problemsOf(good, codes)).toEqual([]);
    });

    it('a code missing from the doc', () => {
      expect(problemsOf(good, { ...codes, SLUICE_ERR_C: { httpStatus: 500 } })).toEqual([
        'SLUICE_ERR_C: no table row',
        'SLUICE_ERR_C: 0 sections (expected 1)',
      ]);
    });

    it('a documented code that does not exist', () => {
      expect(problemsOf(`${good}See also SLUICE_ERR_GONE.\n`, codes)).toEqual(['SLUICE_ERR_GONE: documented but not in ERROR_CODES']);
    });

    it('a wrong HTTP status', () => {
      expect(problemsOf(good.replace('| 503 |', '| 500 |'), codes)).toEqual(['SLUICE_ERR_B: documented HTTP 500, ERROR_CODES says 503']);
    });

    it('a duplicated row or section', () => {
      expect(problemsOf(`${good}| \`SLUICE_ERR_A\` | 400 | again |\n### \`SLUICE_ERR_A\`\n`, codes)).toEqual([
        'SLUICE_ERR_A: more than one table row',
        'SLUICE_ERR_A: 2 sections (expected 1)',
      ]);
    });
  });
});
