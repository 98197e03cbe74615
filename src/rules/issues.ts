// A problem found in a rules file, with its field path and its place in the file, and the one
// error that carries all of them.
import { SluiceError } from '../errors.js';

/** One problem in a rules file. Lines and columns count from 1. */
export interface RulesIssue {
  /** Dotted path of the field (`domains.0.descriptors.1.rate_limit.unit`), or `(root)`. */
  path: string;
  line: number;
  column: number;
  message: string;
}

/** `file:line:col path: message` — the form editors and terminals turn into links. */
export function formatIssue(file: string, issue: RulesIssue): string {
  return `${file}:${issue.line}:${issue.column} ${issue.path}: ${issue.message}`;
}

/** Sorts issues by position, drops exact duplicates (two checks may find the same thing). */
export function orderIssues(issues: readonly RulesIssue[]): RulesIssue[] {
  const seen = new Set<string>();
  return [...issues]
    .sort((a, b) => a.line - b.line || a.column - b.column || a.path.localeCompare(b.path))
    .filter((i) => {
      const k = `${i.line}:${i.column}:${i.path}:${i.message}`;
      if (seen.has(k)) return false;
      seen.add(k);
      return true;
    });
}

/**
 * SLUICE_ERR_INVALID_RULES listing every issue: the message has one `file:line:col path: message`
 * line per issue under a header line; `details` is the issue list.
 */
export function invalidRules(file: string, issues: readonly RulesIssue[]): SluiceError {
  const ordered = orderIssues(issues);
  const header = `invalid rules file ${file}: ${ordered.length} issue${ordered.length === 1 ? '' : 's'}`;
  const message = [header, ...ordered.map((i) => formatIssue(file, i))].join('\n');
  return new SluiceError('SLUICE_ERR_INVALID_RULES', message, { details: ordered });
}
