// Rules-file failure family: the text does not parse (YAML or JSON syntax). One case per failure
// mode; each names its line.
import { describe, expect, it } from 'vitest';
import { expectIssue, issuesOf, type FailureCase } from './issues-helper.js';

const yamlCases: FailureCase[] = [
  ['unclosed flow sequence', 'domains:\n  - domain: a\n    descriptors: [\n  x: 1\n', '(syntax)', 4, /Flow sequence|must be sufficiently indented/],
  ['duplicate key', 'domains: []\nplans: {}\ndomains: []\n', '(syntax)', 3, 'Map keys must be unique'],
  ['bad indentation', 'domains:\n  - domain: a\n   descriptors: []\n', '(syntax)', 3, 'Sequence item without - indicator'],
  // The parser notices a missing quote where the input ends.
  ['unterminated quote', 'http:\n  domain: "api\n', '(syntax)', 3, 'Missing closing "quote'],
  ['tab indentation', 'domains:\n\t- domain: a\n', '(syntax)', 2, /[Tt]ab/],
  ['two documents', 'domains: []\n---\nplans: {}\n', '(syntax)', 2, /multiple documents|document/i],
];

const jsonCases: FailureCase[] = [
  ['trailing comma', '{\n  "domains": [\n    {"domain": "a",}\n  ]\n}\n', '(syntax)', 3, "expected a double-quoted property name, found '}'"],
  ['missing comma', '{\n  "plans": {}\n  "domains": []\n}\n', '(syntax)', 3, "expected ',' or '}', found '\"'"],
  ['single quotes', "{\n  'domains': []\n}\n", '(syntax)', 2, "expected a double-quoted property name, found '''"],
  ['truncated', '{\n  "domains": [\n', '(syntax)', 3, 'expected a value, found end of input'],
  ['unterminated string', '{\n  "domains": [],\n  "plans": {"free\n}\n', '(syntax)', 3, 'control character in a string'],
  ['bad literal', '{\n  "domains": [],\n  "http": nope\n}\n', '(syntax)', 3, "expected a value, found 'n'"],
  ['text after the document', '{"domains": []}\n{}\n', '(syntax)', 2, "unexpected '{' after the end of the document"],
  ['duplicate key', '{\n  "domains": [],\n  "domains": []\n}\n', '(syntax)', 3, 'Map keys must be unique'],
];

describe('YAML syntax errors name their line', () => {
  it.each(yamlCases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message);
  });
});

describe('JSON syntax errors name their line', () => {
  it.each(jsonCases)('%s', (_name, text, path, line, message) => {
    expectIssue(text, path, line, message, 'rules.json');
  });

  it('JSON is recognised by its first character when the name does not say', () => {
    expectIssue('{\n  "domains": [,]\n}\n', '(syntax)', 2, 'JSON syntax error', 'rules.conf');
  });
});

describe('the document is not a mapping', () => {
  it.each([
    ['empty file', ''],
    ['a list', '- domains\n'],
    ['a scalar', 'hello\n'],
  ])('%s', (_name, text) => {
    const { issues } = issuesOf(text);
    expect(issues).toEqual([
      { path: '(root)', line: 1, column: 1, message: 'the rules file must be a mapping with domains, plans, route_groups, http, queues, auth, callbacks, slot_key and/or response_headers' },
    ]);
  });
});
