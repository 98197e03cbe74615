// Checks that span fields or sections (duplicates, references, one limit per rule, the policy each
// rule resolves to). They read the raw data defensively, so they run even where the schema found
// other problems and every issue is reported in one pass.
import { nodeOwnSchema } from './descriptor-schema.js';
import { planSchema, type LimitPart } from './limit-schema.js';
import { checkPolicy, policyInputOf } from './policy-map.js';
import { isSecretHeader } from './queue-schema.js';
import { defaultRuleName, ruleIdOf, type PathStep } from './rule-id.js';
import { tenantIssues } from './tenant-checks.js';
import type { FieldPath } from './source-map.js';
import { unreachableCostQuotas } from '../throttle/quota.js';

/** A problem at a field path; `atKey` points at the field's key, `firstAt` at an earlier field it clashes with. */
export interface PathIssue {
  path: FieldPath;
  message: string;
  atKey?: boolean;
  firstAt?: FieldPath;
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined);

/** Every cross-field problem of a rules file's data. */
export function semanticIssues(data: unknown): PathIssue[] {
  if (!isRec(data)) return [];
  const issues: PathIssue[] = [];
  const plans = isRec(data.plans) ? data.plans : {};
  const names = new Map<string, FieldPath>();

  const domainsSeen = new Map<string, FieldPath>();
  list(data.domains).forEach((d, i) => {
    if (!isRec(d)) return;
    const name = str(d.domain);
    if (name !== undefined) duplicate(issues, domainsSeen, name, ['domains', i, 'domain'], `duplicate domain '${name}'`);
    walk(issues, list(d.descriptors), ['domains', i, 'descriptors'], name ?? `#${i}`, [], plans, names);
  });

  for (const [name, plan] of Object.entries(plans)) checkPlan(issues, plan, ['plans', name]);
  if (isRec(data.http)) checkHttp(issues, data.http, data, domainsSeen);

  const queuesSeen = new Map<string, FieldPath>();
  list(data.queues).forEach((q, i) => {
    if (!isRec(q)) return;
    const name = str(q.name);
    if (name !== undefined) duplicate(issues, queuesSeen, name, ['queues', i, 'name'], `duplicate queue '${name}'`);
    upstreamIssues(issues, q, i);
    quotaIssues(issues, q, i);
    shardIssues(issues, q, i);
    const headers = isRec(q.handler) && isRec(q.handler.headers) ? q.handler.headers : {};
    for (const [header, value] of Object.entries(headers)) {
      if (typeof value === 'string' && isSecretHeader(header)) {
        issues.push({
          path: ['queues', i, 'handler', 'headers', header],
          message: `a literal value for credential header '${header}' is refused: use { env: VARIABLE_NAME }`,
        });
      }
    }
  });
  issues.push(...tenantIssues(data));
  return issues;
}

/** Learning may only slow a queue: its floor must not be above the rates the queue is configured with. */
function upstreamIssues(issues: PathIssue[], q: Record<string, unknown>, i: number): void {
  const floor = isRec(q.upstream) ? q.upstream.floor_per_second : undefined;
  if (typeof floor !== 'number') return;
  const rates = [q.rate_per_second, q.global_rate_per_second].filter((r): r is number => typeof r === 'number');
  const ceiling = Math.min(...rates);
  if (rates.length && floor > ceiling) {
    issues.push({
      path: ['queues', i, 'upstream', 'floor_per_second'],
      message: `a floor of ${floor}/s is above the queue's configured rate (${ceiling}/s): learning only ever slows a queue`,
    });
  }
}

/** A sharded queue: its cap gives each shard at least 1 start per second, and no queue-wide quota (counted in one place). */
function shardIssues(issues: PathIssue[], q: Record<string, unknown>, i: number): void {
  const shards = q.shards;
  if (typeof shards !== 'number' || shards <= 1) return;
  const cap = q.global_rate_per_second;
  if (typeof cap === 'number' && cap < shards) {
    issues.push({ path: ['queues', i, 'shards'], message: `${shards} shards need a global_rate_per_second of at least ${shards} (each shard keeps 1 start per second)` });
  }
  list(q.quotas).forEach((quota, index) => {
    if (isRec(quota) && quota.scope === 'queue') issues.push({ path: ['queues', i, 'quotas', index, 'scope'], message: 'a queue-scope quota is counted in one place: it needs shards 1' });
  });
}

/** A cost quota a job the queue's lanes admit could exceed (the throttle's own rule, here with the file's line). */
function quotaIssues(issues: PathIssue[], q: Record<string, unknown>, i: number): void {
  const plans = isRec(q.plans) ? Object.values(q.plans) : [];
  const capacities = [q.capacity, ...plans.map((p) => (isRec(p) ? p.capacity : undefined))].filter((c): c is number => typeof c === 'number');
  const quotas = list(q.quotas).map((quota) => (isRec(quota) ? quota : {}));
  for (const { index, message } of unreachableCostQuotas(quotas, capacities)) issues.push({ path: ['queues', i, 'quotas', index, 'limit'], message });
}

function duplicate(issues: PathIssue[], seen: Map<string, FieldPath>, name: string, path: FieldPath, message: string): void {
  const first = seen.get(name);
  if (first) issues.push({ path, message, firstAt: first });
  else seen.set(name, path);
}

function walk(
  issues: PathIssue[],
  nodes: unknown[],
  base: FieldPath,
  domain: string,
  steps: readonly PathStep[],
  plans: Rec,
  names: Map<string, FieldPath>,
): void {
  const siblings = new Map<string, FieldPath>();
  nodes.forEach((node, i) => {
    const path = [...base, i];
    if (!isRec(node)) return;
    const key = str(node.key);
    const value = str(node.value);
    if (key !== undefined) {
      const what = value === undefined ? `key '${key}'` : `key '${key}' value '${value}'`;
      // `*` and no value both match any value: two such siblings are one node twice.
      const slot = value === undefined || value === '*' ? '\u0001' : value;
      duplicate(issues, siblings, `${key}\u0000${slot}`, [...path, 'key'], `duplicate descriptor ${what} at this level`);
    }
    const step = { key: key ?? `#${i}`, value };
    const own = nodeOwnSchema.safeParse(node);
    if (own.success) checkNode(issues, own.data, path, domain, [...steps, step], plans, names);
    walk(issues, list(node.descriptors), [...path, 'descriptors'], domain, [...steps, step], plans, names);
  });
}

/** Rules about one descriptor node's own fields. */
function checkNode(
  issues: PathIssue[],
  node: LimitPart & { name?: string | undefined; plan?: string | undefined; unlimited?: boolean | undefined; descriptors?: unknown },
  path: FieldPath,
  domain: string,
  steps: readonly PathStep[],
  plans: Rec,
  names: Map<string, FieldPath>,
): void {
  const limits: string[] = (['rate_limit', 'policy', 'plan'] as const).filter((f) => node[f] !== undefined);
  if (node.unlimited === true) limits.push('unlimited');
  if (limits.length > 1) {
    issues.push({ path, message: `give only one of rate_limit, policy, plan or unlimited (found ${limits.join(', ')})` });
  }
  checkAlgorithmFields(issues, node, path);
  if (limits.length === 0) {
    for (const f of ['name', 'fail_mode', 'timeout', 'shadow_mode'] as const) {
      if (node[f] !== undefined) issues.push({ path: [...path, f], atKey: true, message: `only a descriptor that limits takes ${f}` });
    }
    if (list(node.descriptors).length === 0) {
      issues.push({ path, message: 'this descriptor does nothing: give it rate_limit, policy, plan, unlimited: true or nested descriptors' });
    }
    return;
  }
  if (node.unlimited === true) {
    for (const f of ['fail_mode', 'timeout', 'shadow_mode'] as const) {
      if (node[f] !== undefined) issues.push({ path: [...path, f], atKey: true, message: `an unlimited descriptor takes no ${f}` });
    }
  }
  if (node.plan !== undefined && !(node.plan in plans)) {
    const known = Object.keys(plans);
    issues.push({ path: [...path, 'plan'], message: `unknown plan '${node.plan}' (${known.length ? `plans: ${known.join(', ')}` : 'no plans are defined'})` });
  }
  const name = node.name ?? defaultRuleName(ruleIdOf(domain, steps));
  const hint = node.name === undefined ? '; set a distinct name' : '';
  duplicate(issues, names, name, node.name === undefined ? [...path, 'key'] : [...path, 'name'], `rule name '${name}' is already used${hint}`);
  if (limits.length === 1) policyIssues(issues, node, path, name);
}

function checkPlan(issues: PathIssue[], raw: unknown, path: FieldPath): void {
  const plan = planSchema.safeParse(raw);
  if (!plan.success) return;
  const count = Number(plan.data.rate_limit !== undefined) + Number(plan.data.policy !== undefined);
  if (count !== 1) issues.push({ path, message: count ? 'give only one of rate_limit or policy' : 'a plan needs rate_limit or policy' });
  checkAlgorithmFields(issues, plan.data, path);
  if (count === 1) policyIssues(issues, plan.data, path, undefined);
}

function checkAlgorithmFields(issues: PathIssue[], limit: LimitPart, path: FieldPath): void {
  if (limit.algorithm !== undefined && limit.rate_limit === undefined) {
    issues.push({ path: [...path, 'algorithm'], atKey: true, message: 'algorithm goes with rate_limit (with policy, set policy.algorithm)' });
  }
  if (limit.rate_limit?.burst !== undefined && limit.algorithm !== 'leaky-bucket') {
    issues.push({ path: [...path, 'rate_limit', 'burst'], atKey: true, message: 'burst is a leaky-bucket parameter: set algorithm: leaky-bucket' });
  }
}

function policyIssues(issues: PathIssue[], limit: LimitPart, path: FieldPath, name: string | undefined): void {
  const input = policyInputOf(limit, name);
  if (!input) return;
  for (const i of checkPolicy(input, limit).issues) {
    issues.push({ path: [...path, ...i.path], message: i.message, ...(i.atKey ? { atKey: true } : {}) });
  }
}

function checkHttp(issues: PathIssue[], http: Rec, data: Rec, domains: Map<string, FieldPath>): void {
  const domain = str(http.domain);
  if (domain !== undefined && !domains.has(domain)) {
    issues.push({ path: ['http', 'domain'], message: `no domain '${domain}' in domains` });
  }
  const hasRoutes = isRec(data.route_groups) && Object.keys(data.route_groups).length > 0;
  list(http.descriptors).forEach((template, t) => {
    list(template).forEach((entry, e) => {
      const source = typeof entry === 'string' ? entry : isRec(entry) ? str(entry.source) : undefined;
      const path = ['http', 'descriptors', t, e];
      if (source === 'route' && !hasRoutes) issues.push({ path, message: 'source route needs route_groups' });
      if (source === 'user' && http.user === undefined) issues.push({ path, message: 'source user needs http.user (property or header)' });
      if (source === 'plan' && http.plan === undefined) issues.push({ path, message: 'source plan needs http.plan (property, header or default)' });
    });
  });
}
