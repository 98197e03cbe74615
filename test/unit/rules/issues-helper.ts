// Helpers of the rules-file failure tests: parse a text that must be refused and look at its issues.
import { expect } from 'vitest';
import { isSluiceError } from '../../../src/errors.js';
import type { RulesIssue } from '../../../src/rules/issues.js';
import { parseRules } from '../../../src/rules/rules.js';

/** The issues of a text that must be refused (fails the test when it parses). */
export function issuesOf(text: string, filename = 'rules.yaml'): { issues: RulesIssue[]; message: string } {
  try {
    parseRules(text, { filename });
  } catch (e) {
    if (!isSluiceError(e, 'SLUICE_ERR_INVALID_RULES')) throw e;
    return { issues: e.details as RulesIssue[], message: e.message };
  }
  throw new Error('expected the rules to be refused, but they parsed');
}

/** One failure mode: a text, and the issue it must produce. */
export type FailureCase = [name: string, text: string, path: string, line: number, message: string | RegExp];

/** Asserts the text is refused with an issue at `path` on `line` whose message matches, also in the error message. */
export function expectIssue(text: string, path: string, line: number, message: string | RegExp, filename = 'rules.yaml'): RulesIssue {
  const { issues, message: all } = issuesOf(text, filename);
  const found = issues.find((i) => i.path === path && i.line === line);
  expect(found, `no issue at ${path} line ${line}; got:\n${all}`).toBeDefined();
  if (typeof message === 'string') expect(found!.message).toContain(message);
  else expect(found!.message).toMatch(message);
  expect(all).toContain(`${filename}:${line}:${found!.column} ${path}: ${found!.message}`);
  return found!;
}

/** A minimal valid domain section, to put a failing field into. */
export const DOMAIN = `domains:
  - domain: api
    descriptors:
      - key: ip
        rate_limit: { unit: second, requests_per_unit: 10 }
`;
