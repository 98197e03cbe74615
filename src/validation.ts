// Turns zod issues into the messages sluice shows: every issue, each naming its field path.
import { isDeepStrictEqual } from 'node:util';
import type { z } from 'zod';

/** One validation problem, with the dotted path of the field it concerns. */
export interface Issue {
  path: string;
  message: string;
  code: string;
}

/** Flattens a ZodError into issues with dotted paths (`rules.0.rate_limit.unit`). */
export function issuesOf(error: z.ZodError): Issue[] {
  return flatten(error.issues, []);
}

type ZodIssue = z.ZodError['issues'][number];

function flatten(issues: readonly ZodIssue[], base: readonly PropertyKey[]): Issue[] {
  return issues.flatMap((i): Issue[] => {
    const path = [...base, ...i.path];
    // An unknown field is reported at the object; name the field itself, one issue each.
    if (i.code === 'unrecognized_keys') {
      return i.keys.map((k) => ({ path: joinPath([...path, k]), message: 'unknown field', code: i.code }));
    }
    // "Invalid input" of a union says nothing: report the branch that came closest (fewest issues).
    if (i.code === 'invalid_union' && i.errors.length) {
      const closest = [...i.errors].sort((a, b) => a.length - b.length)[0]!;
      if (closest.length) return flatten(closest, path);
    }
    return [{ path: joinPath(path), message: i.message, code: i.code }];
  });
}

function joinPath(path: readonly PropertyKey[]): string {
  return path.length ? path.map(String).join('.') : '(root)';
}

/** "field: message; other.field: message" — for error messages. */
export function describeIssues(issues: Issue[]): string {
  return issues.map((i) => `${i.path}: ${i.message}`).join('; ');
}

/**
 * "Did this configuration change?": the one test, for every cache of things made from a configuration
 * (a throttle per name, a queue's throttle, the running workers). Deep equality, so neither key order
 * nor a fresh copy of the same values counts as a change.
 */
export function sameConfig(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a, b);
}
