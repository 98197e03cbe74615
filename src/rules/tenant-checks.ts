// Cross-field checks of tenants and plans: the auth section's own (a key hash listed twice, a tenant
// plan no queue defines), a queue's default plan that it does not define, and a queue keyed by tenant
// in a file that authenticates no tenants.
import { authIssues } from '../auth/issues.js';
import type { FieldPath } from './source-map.js';

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface TenantIssue {
  path: FieldPath;
  message: string;
  firstAt?: FieldPath;
}

export function tenantIssues(data: unknown): TenantIssue[] {
  if (!isRec(data)) return [];
  const issues: TenantIssue[] = [...authIssues(data)];
  const tenants = isRec(data.auth) && isRec(data.auth.tenants);
  (Array.isArray(data.queues) ? data.queues : []).forEach((q: unknown, i: number) => {
    if (!isRec(q)) return;
    const plans = isRec(q.plans) ? Object.keys(q.plans) : [];
    if (typeof q.default_plan === 'string' && !plans.includes(q.default_plan)) {
      issues.push({
        path: ['queues', i, 'default_plan'],
        message: `plan '${q.default_plan}' is not one of this queue's plans${plans.length ? ` (${plans.join(', ')})` : ' (it has none)'}`,
      });
    }
    if (q.key === 'tenant' && !tenants) {
      issues.push({ path: ['queues', i, 'key'], message: 'key: tenant needs tenants: add auth.tenants (with `auth: none` there is no tenant)' });
    }
  });
  return issues;
}
