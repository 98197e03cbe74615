// Reading a rules file: parse (YAML or JSON), validate (schema, then cross-field checks), compile.
// Every problem is reported at once, each with its field path, line and column.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { z } from 'zod';
import { compileAuth } from '../auth/tenant-keys.js';
import { compileRules, type Rules } from './compile.js';
import { rulesErrorMap, rulesFileSchema } from './file-schema.js';
import { invalidRules, type RulesIssue } from './issues.js';
import { semanticIssues, type PathIssue } from './semantic.js';
import { parseSource, pathText, type ParsedSource } from './source-map.js';

/** Options of {@link parseRules}. */
export interface ParseRulesOptions {
  /** Named in every issue, and the base of relative module paths (default `rules`). */
  filename?: string;
  /** Default: from the file extension (`.json`), else from the first character (`{`), else YAML. */
  format?: 'yaml' | 'json';
}

/** The format of a rules text. */
export function formatOf(filename: string, text: string): 'yaml' | 'json' {
  if (/\.json$/i.test(filename)) return 'json';
  if (/\.ya?ml$/i.test(filename)) return 'yaml';
  return text.trimStart().startsWith('{') ? 'json' : 'yaml';
}

/**
 * Parses, validates and compiles rules text.
 * @throws SluiceError SLUICE_ERR_INVALID_RULES whose `details` is every {@link RulesIssue} and whose
 *   message lists them as `file:line:col path: message`.
 */
export function parseRules(text: string, options: ParseRulesOptions = {}): Rules {
  const file = options.filename ?? 'rules';
  const source = parseSource(text, options.format ?? formatOf(file, text));
  if (source.syntaxIssues.length) throw invalidRules(file, source.syntaxIssues);
  const parsed = rulesFileSchema.safeParse(source.data, { error: rulesErrorMap });
  const issues = [
    ...(parsed.success ? [] : zodIssues(parsed.error, source)),
    ...semanticIssues(source.data).map((i) => placed(i, source)),
  ];
  // Keys named by env or file are read (and hashed) now: one that cannot be read is an issue with its line.
  const auth = parsed.success && parsed.data.auth !== undefined ? compileAuth(parsed.data.auth, dirname(resolve(file))) : undefined;
  for (const p of auth?.problems ?? []) issues.push(placed({ path: p.path, message: p.message }, source));
  if (issues.length || !parsed.success) throw invalidRules(file, issues);
  return compileRules(parsed.data, { file, text, locate: (path) => source.locate(path), ...(auth ? { auth: auth.auth } : {}) });
}

/** Reads and parses a rules file (synchronously: used at start-up, where nothing else can run yet). */
export function loadRules(file: string): Rules {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw unreadable(file, e);
  }
  return parseRules(text, { filename: file });
}

/** Reads and parses a rules file without blocking the event loop (hot reload). */
export async function loadRulesAsync(file: string): Promise<Rules> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw unreadable(file, e);
  }
  return parseRules(text, { filename: file });
}

function unreadable(file: string, e: unknown) {
  return invalidRules(file, [{ path: '(file)', line: 1, column: 1, message: `cannot read the file: ${(e as Error).message}` }]);
}

function zodIssues(error: z.ZodError, source: ParsedSource): RulesIssue[] {
  return error.issues.flatMap((i): RulesIssue[] => {
    if (i.code === 'unrecognized_keys') {
      return i.keys.map((k) => placed({ path: [...i.path, k], message: 'unknown field', atKey: true }, source));
    }
    return [placed({ path: i.path, message: i.message }, source)];
  });
}

function placed(issue: PathIssue, source: ParsedSource): RulesIssue {
  const at = source.locate(issue.path, { key: issue.atKey === true });
  let message = issue.message;
  if (issue.firstAt) {
    const first = source.locate(issue.firstAt);
    message += ` (first at line ${first.line})`;
  }
  return { path: pathText(issue.path), line: at.line, column: at.column, message };
}
