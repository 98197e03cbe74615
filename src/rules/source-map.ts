// Reads rules text (YAML or JSON) into plain data while keeping the document's node positions, so
// a problem found later at a field path can name its line and column.
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import type { RulesIssue } from './issues.js';
import { jsonSyntaxError } from './json-check.js';

/** A field path as zod reports it. */
export type FieldPath = readonly PropertyKey[];

/** Rules text read into data, with a way back from a field path to the text. */
export interface ParsedSource {
  /** The data, or undefined when the text has syntax errors. */
  data: unknown;
  /** Syntax errors (each with its line), empty when the text parsed. */
  syntaxIssues: RulesIssue[];
  /**
   * Line and column of the field at `path`: its value, or with `key` its key (for unknown fields).
   * A path into something absent (a missing field) points at the nearest enclosing node.
   */
  locate(path: FieldPath, options?: { key?: boolean }): { line: number; column: number };
}

/** Dotted text of a path, as issues show it. */
export function pathText(path: FieldPath): string {
  return path.length ? path.map(String).join('.') : '(root)';
}

/**
 * Parses rules text. JSON is checked strictly first (YAML would accept JSON mistakes such as
 * trailing commas), then read through the YAML parser, which keeps positions: JSON is YAML.
 */
export function parseSource(text: string, format: 'yaml' | 'json'): ParsedSource {
  const lines = new LineCounter();
  const at = (offset: number) => {
    const p = lines.linePos(offset);
    return { line: p.line, column: p.col };
  };
  if (format === 'json') {
    // JSON is YAML, but YAML forgives JSON mistakes (trailing commas, single quotes): check it strictly first.
    const jsonIssue = jsonSyntaxIssue(text);
    if (jsonIssue) return { data: undefined, syntaxIssues: [jsonIssue], locate: () => ({ line: 1, column: 1 }) };
  }
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const syntaxIssues = doc.errors.map((e) => ({ path: '(syntax)', ...at(e.pos[0]), message: e.message.split('\n')[0]! }));
  const locate = (path: FieldPath, options: { key?: boolean } = {}) => at(offsetOf(doc, path, options.key === true));
  return { data: syntaxIssues.length ? undefined : doc.toJS({ maxAliasCount: 1000 }), syntaxIssues, locate };
}

function offsetOf(doc: Document, path: FieldPath, key: boolean): number {
  let node: unknown = doc.contents;
  let offset = rangeStart(node) ?? 0;
  for (let i = 0; i < path.length; i++) {
    if (isAlias(node)) node = node.resolve(doc);
    const segment = path[i]!;
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) : String(p.key)) === String(segment));
      if (!pair) break;
      if (last && key) return rangeStart(pair.key) ?? offset;
      // `key:` with nothing after it has a null value: point at the key.
      node = pair.value;
      offset = rangeStart(node) ?? rangeStart(pair.key) ?? offset;
      if (node === null) break;
    } else if (isSeq(node)) {
      const item = node.items[Number(segment)];
      if (item === undefined) break;
      node = item;
      offset = rangeStart(node) ?? offset;
    } else {
      break;
    }
  }
  return offset;
}

function rangeStart(node: unknown): number | undefined {
  return node && typeof node === 'object' && 'range' in node ? (node as Node).range?.[0] : undefined;
}

/** The JSON syntax error of `text`, with its line, or undefined when it parses. */
function jsonSyntaxIssue(text: string): RulesIssue | undefined {
  const error = jsonSyntaxError(text);
  if (!error) return undefined;
  const before = text.slice(0, error.offset).split('\n');
  return { path: '(syntax)', line: before.length, column: before[before.length - 1]!.length + 1, message: `JSON syntax error: ${error.message}` };
}
