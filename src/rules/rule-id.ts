// Stable identities of rules: a readable id from the descriptor path, and the default name
// (metric label, key namespace) derived from it.
import { createHash } from 'node:crypto';

/** One step of a descriptor path. */
export interface PathStep {
  key: string;
  value?: string | undefined;
}

/** `<domain>/<key>[=<value>]/...`: where a rule sits, readable in logs. */
export function ruleIdOf(domain: string, steps: readonly PathStep[]): string {
  return [domain, ...steps.map((s) => (s.value === undefined ? s.key : `${s.key}=${s.value}`))].join('/');
}

/**
 * The default rule name: the id with `/` as `.`, `=` as `_`, `*` as `any` and other characters
 * outside `[A-Za-z0-9._-]` as `-`, e.g. `api.plan_free.api_key`. Over 64 characters it is cut and
 * suffixed with 8 hex digits of the id's hash, so it stays unique and stable.
 */
export function defaultRuleName(id: string): string {
  const slug = id
    .replace(/\//g, '.')
    .replace(/=/g, '_')
    .replace(/\*/g, 'any')
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]/, 'r');
  if (slug.length <= 64) return slug;
  return `${slug.slice(0, 55)}-${createHash('sha1').update(id).digest('hex').slice(0, 8)}`;
}
