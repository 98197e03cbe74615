// The rules file's auth section and queue plans: compiled into tenants, plans and lane keys; a
// duplicate key hash, a plan no queue defines, a default plan a queue lacks and key: tenant without
// tenants are errors with their lines.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isSluiceError } from '../../../src/errors.js';
import { parseRules } from '../../../src/rules/index.js';
import type { RulesIssue } from '../../../src/rules/index.js';

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

function issuesOf(text: string): RulesIssue[] {
  try {
    parseRules(text, { filename: 'rules.yaml' });
  } catch (e) {
    if (isSluiceError(e, 'SLUICE_ERR_INVALID_RULES')) return e.details as RulesIssue[];
    throw e;
  }
  return [];
}

const QUEUE = `queues:
  - name: orders
    rate_per_second: 1
    capacity: 2
    plans:
      pro: { rate_per_second: 20, capacity: 100, max_wait: 1m }
    default_plan: pro
    handler: { type: module, path: ./x.mjs }
`;

describe('auth and plans', () => {
  it('compile into tenants with their plan, plans in the queue settings, and tenant lanes by default', () => {
    const rules = parseRules(`auth:\n  tenants:\n    acme: { plan: pro, keys: [${sha('k')}] }\n${QUEUE}`, { filename: 'rules.yaml' });
    expect(rules.auth?.mode).toBe('keys');
    if (rules.auth?.mode !== 'keys') return;
    expect(rules.auth.keys.tenantOf('k')).toEqual({ name: 'acme', plan: 'pro' });
    const q = rules.queue('orders')!;
    expect(q.key).toEqual({ type: 'tenant' });
    expect(q.throttle.plans).toEqual({ pro: { ratePerSecond: 20, capacity: 100, maxWaitMs: 60_000 } });
    expect(q.throttle.defaultPlan).toBe('pro');
    expect(parseRules(`auth: none\n${QUEUE}`, { filename: 'rules.yaml' }).queue('orders')!.key).toEqual({ type: 'body' });
    expect(parseRules(QUEUE, { filename: 'rules.yaml' }).auth).toBeUndefined();
  });

  it('names each problem with its line', () => {
    const text = `auth:
  tenants:
    a: { plan: gold, keys: [${sha('k1')}] }
    b: { keys: [${sha('k2')}, ${sha('k1')}, { env: SLUICE_TEST_SURELY_UNSET_VAR }] }
queues:
  - name: orders
    rate_per_second: 1
    capacity: 2
    plans: { pro: { rate_per_second: 2, capacity: 3 } }
    default_plan: silver
    handler: { type: module, path: ./x.mjs }
`;
    const issues = issuesOf(text).map((i) => `${i.line} ${i.path}: ${i.message}`);
    expect(issues).toEqual(
      expect.arrayContaining([
        "3 auth.tenants.a.plan: plan 'gold' is not defined by any queue's plans (known: pro)",
        '4 auth.tenants.b.keys.1: duplicate API key hash: a key belongs to one tenant, once (first at line 3)',
        "10 queues.0.default_plan: plan 'silver' is not one of this queue's plans (pro)",
      ]),
    );
    expect(issues.some((i) => i.startsWith('4 auth.tenants.b.keys.2: environment variable SLUICE_TEST_SURELY_UNSET_VAR is not set'))).toBe(true);
    expect(issuesOf(`auth: none\nqueues:\n  - name: q\n    rate_per_second: 1\n    capacity: 1\n    key: tenant\n    handler: { type: module, path: ./x.mjs }\n`).map((i) => `${i.line} ${i.path}`)).toEqual(['6 queues.0.key']);
    expect(issuesOf(`auth:\n  tenants:\n    a: { keys: [raw-secret] }\n`)[0]!.message).toMatch(/never the key itself/);
  });
});
