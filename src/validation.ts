// Turns zod issues into the messages sluice shows: every issue, each naming its field path.
import type { z } from 'zod';

/** One validation problem, with the dotted path of the field it concerns. */
export interface Issue {
  path: string;
  message: string;
  code: string;
}

/** Flattens a ZodError into issues with dotted paths (`rules.0.rate_limit.unit`). */
export function issuesOf(error: z.ZodError): Issue[] {
  return error.issues.map((i) => ({
    path: i.path.length ? i.path.map(String).join('.') : '(root)',
    message: i.message,
    code: i.code,
  }));
}

/** "field: message; other.field: message" — for error messages. */
export function describeIssues(issues: Issue[]): string {
  return issues.map((i) => `${i.path}: ${i.message}`).join('; ');
}
