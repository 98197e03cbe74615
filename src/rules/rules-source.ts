// Where the HTTP layer gets its rules: a fixed Rules object, or a watcher whose rules change on reload.
import type { Rules } from './index.js';

/** Anything with the rules currently in force (a `watchRules` watcher is one). */
export interface RulesSource {
  current(): Rules;
}

export function rulesSourceOf(rules: Rules | RulesSource): RulesSource {
  return 'current' in rules && typeof rules.current === 'function' ? (rules as RulesSource) : { current: () => rules as Rules };
}
