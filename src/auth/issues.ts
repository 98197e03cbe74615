// Cross-field checks of the `auth:` section, on the raw data (they run even where the schema found
// other problems): a key hash listed twice, a tenant whose plan no queue defines.
type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A problem at a field path; `firstAt` points at the earlier field it clashes with. */
export interface AuthIssue {
  path: (string | number)[];
  message: string;
  firstAt?: (string | number)[];
}

/** The plan names the queues of a rules file define (`queues[].plans`). */
export function queuePlanNames(data: unknown): Set<string> {
  const names = new Set<string>();
  if (!isRec(data) || !Array.isArray(data.queues)) return names;
  for (const q of data.queues) if (isRec(q) && isRec(q.plans)) for (const n of Object.keys(q.plans)) names.add(n);
  return names;
}

/** Every cross-field problem of `data.auth`. */
export function authIssues(data: unknown): AuthIssue[] {
  if (!isRec(data) || !isRec(data.auth) || !isRec(data.auth.tenants)) return [];
  const issues: AuthIssue[] = [];
  const plans = queuePlanNames(data);
  const seen = new Map<string, (string | number)[]>();
  for (const [name, tenant] of Object.entries(data.auth.tenants)) {
    if (!isRec(tenant)) continue;
    if (typeof tenant.plan === 'string' && !plans.has(tenant.plan)) {
      const known = [...plans].sort();
      issues.push({
        path: ['auth', 'tenants', name, 'plan'],
        message: `plan '${tenant.plan}' is not defined by any queue's plans${known.length ? ` (known: ${known.join(', ')})` : ' (no queue defines plans)'}`,
      });
    }
    if (!Array.isArray(tenant.keys)) continue;
    tenant.keys.forEach((k, i) => {
      if (typeof k !== 'string' || !/^sha256:[0-9a-fA-F]{64}$/.test(k)) return;
      const path = ['auth', 'tenants', name, 'keys', i];
      const hex = k.toLowerCase();
      const first = seen.get(hex);
      if (first) issues.push({ path, message: 'duplicate API key hash: a key belongs to one tenant, once', firstAt: first });
      else seen.set(hex, path);
    });
  }
  return issues;
}
