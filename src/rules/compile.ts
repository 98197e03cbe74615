// Builds the frozen Rules object from a validated rules file: policies parsed once, descriptor
// trees indexed for matching, the request mapping and the queue configurations.
import { createHash } from 'node:crypto';
import type { AuthRules } from '../auth/tenant-keys.js';
import { dirname, resolve } from 'node:path';
import { parsePolicy, type Policy, type PolicyInput } from '../limiters/policy.js';
import type { HeaderSelection } from '../headers/headers.js';
import { RouteGroups, type RouteGroupSpec } from '../request/route-groups.js';
import type { DescriptorNodeSpec } from './descriptor-schema.js';
import { TreeLevel, descriptorIdentity, walkTree, type DescriptorEntry, type Rule, type TreeNode } from './descriptor.js';
import type { RulesFileSpec } from './file-schema.js';
import type { LimitPart } from './limit-schema.js';
import { policyInputOf } from './policy-map.js';
import { compileQueue, type QueueRule } from './queues.js';
import type { RequestInfo } from '../request/request-info.js';
import { compileHttp, defaultHash, type DescriptorOptions, type HttpRules } from './request.js';
import { RecentMap } from '../cache/recent-map.js';
import { defaultRuleName, ruleIdOf, type PathStep } from './rule-id.js';
import type { FieldPath } from './source-map.js';
import { slotKeyOf } from './slot-key.js';

/** A descriptor of a request together with the rule it matched. */
export interface RequestMatch {
  readonly domain: string;
  readonly entries: readonly DescriptorEntry[];
  readonly rule: Rule;
  /** The rule's limiter key: descriptorIdentity(entries). */
  readonly identity: string;
}

/** Distinct source values (clients × routes, per hash function) whose matches a Rules keeps. */
export const MATCH_MEMO_SIZE = 4_096;

const NO_MATCHES: readonly RequestMatch[] = Object.freeze([]);

/** A validated, compiled, frozen rules file. */
export interface Rules {
  /** 12 hex digits of the file content's SHA-256: which rules were in force, for logs. */
  readonly version: string;
  /** The file the rules came from (as given). */
  readonly file: string;
  /** Domain names, in file order. */
  readonly domains: readonly string[];
  /** Every rule (limiting or unlimited descriptor node), in file order. */
  readonly rules: readonly Rule[];
  /** Plan name -> its policy (without a rule name). */
  readonly plans: Readonly<Record<string, Policy>>;
  /** Route group name -> patterns and methods, in match order. */
  readonly routeGroups: Readonly<Record<string, RouteGroupSpec>>;
  /** The `http:` section, or undefined when the file has none. */
  readonly http: HttpRules | undefined;
  /** Throttled queues, in file order. */
  readonly queues: readonly QueueRule[];
  /** The `callbacks:` section: hosts a submit's callback_url may name (absent: callbacks refused). */
  readonly callbacks?: { readonly hosts: readonly string[] };
  /** The `response_headers:` section: which rate-limit header sets to send (empty: the defaults). */
  readonly responseHeaders: HeaderSelection;
  /** The `slot_key:` in force (set, or its default): the descriptor key whose entry gives a rule's keys their cluster slot. */
  readonly slotKey?: string;
  /** The `auth:` section: `none`, or the tenants' key digests; undefined when the file has no such section. @internal */
  readonly auth: AuthRules | undefined;
  /** The queue called `name`. */
  queue(name: string): QueueRule | undefined;
  /**
   * The rule a descriptor matches in `domain` (Envoy semantics: level by level, exact value beats
   * wildcard beats key-only, every entry consumed, last node has a rule), or undefined.
   */
  matchDescriptor(domain: string, entries: readonly DescriptorEntry[]): Rule | undefined;
  /** The descriptors the `http:` section makes of a request (none without an `http:` section). */
  requestDescriptors(req: RequestInfo, options?: DescriptorOptions): DescriptorEntry[][];
  /** {@link requestDescriptors} matched against the http domain: one entry per descriptor that hit a rule. */
  matchRequest(req: RequestInfo, options?: DescriptorOptions): readonly RequestMatch[];
  /** The route group of a method and raw path, or undefined. */
  routeOf(method: string, path: string): string | undefined;
  /**
   * The value of one identity source for a request — `api_key` (hashed), `user`, `ip` (through the
   * trusted proxies, grouped), `plan`, `route`, `method` or `header:<Name>` (hashed when secret) —
   * with the `http:` section's settings (or their defaults); undefined when the request has none.
   */
  requestSource(source: string, req: RequestInfo, options?: DescriptorOptions): string | undefined;
}

/** What compilation needs besides the data. */
export interface CompileContext {
  file: string;
  text: string;
  locate(path: FieldPath): { line: number; column: number };
  /** The compiled `auth:` section (its keys read and hashed), when the file has one. */
  auth?: AuthRules;
}

/** Compiles validated data (the semantic checks passed, so every policy parses). */
export function compileRules(spec: RulesFileSpec, ctx: CompileContext): Rules {
  const plans: Record<string, Policy> = {};
  const planParts: Record<string, LimitPart> = {};
  for (const [name, plan] of Object.entries(spec.plans ?? {})) {
    planParts[name] = plan;
    plans[name] = parsePolicy(policyInputOf(plan, undefined));
  }

  const rules: Rule[] = [];
  const trees = new Map<string, TreeLevel>();
  (spec.domains ?? []).forEach((d, i) => {
    const build = (nodes: readonly DescriptorNodeSpec[], base: FieldPath, steps: readonly PathStep[]): TreeLevel =>
      new TreeLevel(
        nodes.map((node, j): TreeNode => {
          const path = [...base, j];
          const here = [...steps, { key: node.key, value: node.value }];
          const rule = ruleOf(node, d.domain, here, path, planParts, ctx);
          if (rule) rules.push(rule);
          return { key: node.key, match: matchOf(node.value), rule, children: build(node.descriptors ?? [], [...path, 'descriptors'], here) };
        }),
      );
    trees.set(d.domain, build(d.descriptors, ['domains', i, 'descriptors'], []));
  });

  const routeGroups: Record<string, RouteGroupSpec> = {};
  for (const [name, g] of Object.entries(spec.route_groups ?? {})) {
    routeGroups[name] = g.methods ? { paths: g.paths, methods: g.methods } : { paths: g.paths };
  }
  const routes = new RouteGroups(routeGroups);
  const http = spec.http ? compileHttp(spec.http, routes) : undefined;
  const slotKey = slotKeyOf(spec.slot_key, spec.http);
  // Identity sources (queue keys) work without an http: section too, with its defaults.
  const sources = http ?? compileHttp({ domain: '-', descriptors: [] } as unknown as Parameters<typeof compileHttp>[0], routes);
  const baseDir = dirname(resolve(ctx.file));
  const queues = (spec.queues ?? []).map((q) => compileQueue(q, baseDir, ctx.auth?.mode === 'keys'));
  const queueByName = new Map(queues.map((q) => [q.name, q]));

  const matchDescriptor = (domain: string, entries: readonly DescriptorEntry[]) => {
    const tree = trees.get(domain);
    return tree ? walkTree(tree, entries) : undefined;
  };
  const requestDescriptors = (req: RequestInfo, options?: DescriptorOptions) => (http ? http.descriptors(req, options) : []);
  // A request's matches are a pure function of its sources' values (and the hash of secrets), so one
  // client on one route gets the same frozen list every time: no descriptor arrays, tree walk or
  // identity strings per request (issue 12 item 1). One memo per hash function (the middleware's is
  // made once; a caller passing a new function each time only empties them).
  // The sources' values of the request being matched: scratch, filled and read within one synchronous call.
  const sourceValues: (string | undefined)[] = [];
  const memos = new Map<(v: string) => string, RecentMap<readonly RequestMatch[]>>();
  const matchMemo = (hash: (v: string) => string): RecentMap<readonly RequestMatch[]> => {
    let memo = memos.get(hash);
    if (!memo) {
      if (memos.size >= 8) memos.clear();
      memo = new RecentMap(MATCH_MEMO_SIZE);
      memos.set(hash, memo);
    }
    return memo;
  };
  const matchesOf = (descriptors: DescriptorEntry[][]): readonly RequestMatch[] => {
    const domain = http!.rules.domain;
    const out: RequestMatch[] = [];
    for (const entries of descriptors) {
      const rule = matchDescriptor(domain, entries);
      if (rule) out.push(Object.freeze({ domain, entries: Object.freeze(entries.map((e) => Object.freeze(e))), rule, identity: descriptorIdentity(entries) }));
    }
    return Object.freeze(out);
  };

  return deepFreeze({
    version: createHash('sha256').update(ctx.text).digest('hex').slice(0, 12),
    file: ctx.file,
    domains: (spec.domains ?? []).map((d) => d.domain),
    rules,
    plans,
    routeGroups,
    http: http?.rules,
    queues,
    responseHeaders: headerSelectionOf(spec.response_headers),
    ...(slotKey === undefined ? {} : { slotKey }),
    ...(spec.callbacks ? { callbacks: { hosts: spec.callbacks.allow.map((h) => h.toLowerCase().replace(/^\[(.*)\]$/, '$1')) } } : {}),
    auth: ctx.auth,
    queue: (name: string) => queueByName.get(name),
    matchDescriptor,
    requestDescriptors,
    matchRequest(req: RequestInfo, options?: DescriptorOptions): readonly RequestMatch[] {
      if (!http) return NO_MATCHES;
      const hash = options?.hash ?? defaultHash;
      const key = http.sourcesKey(req, hash, sourceValues);
      return matchMemo(hash).of(key, () => matchesOf(http.descriptorsOf(sourceValues, hash)));
    },
    routeOf: (method: string, path: string) => routes.match(method, path),
    requestSource: (source: string, req: RequestInfo, options?: DescriptorOptions) => sources.source(source, req, options),
  });
}

function headerSelectionOf(spec: RulesFileSpec['response_headers']): HeaderSelection {
  const out: HeaderSelection = {};
  if (!spec) return out;
  if (spec.retry_after !== undefined) out.retryAfter = spec.retry_after;
  if (spec.ietf !== undefined) out.ietf = spec.ietf === 'none' ? false : spec.ietf;
  if (spec.legacy !== undefined) out.legacy = spec.legacy;
  if (spec.legacy_reset !== undefined) out.legacyReset = spec.legacy_reset;
  return out;
}

function matchOf(value: string | undefined): TreeNode['match'] {
  if (value === undefined || value === '*') return { kind: 'any' };
  if (value.endsWith('*')) return { kind: 'prefix', text: value.slice(0, -1) };
  return { kind: 'exact', text: value };
}

function ruleOf(
  node: DescriptorNodeSpec,
  domain: string,
  steps: readonly PathStep[],
  path: FieldPath,
  plans: Record<string, LimitPart>,
  ctx: CompileContext,
): Rule | undefined {
  const limiting = node.rate_limit !== undefined || node.policy !== undefined || node.plan !== undefined;
  if (!limiting && node.unlimited !== true) return undefined;
  const id = ruleIdOf(domain, steps);
  const name = node.name ?? defaultRuleName(id);
  const at = ctx.locate(path);
  const base = { id, name, domain, source: { file: ctx.file, line: at.line, column: at.column } };
  if (node.unlimited === true) return { ...base, policy: null, shadowMode: false, unlimited: true };
  // A plan gives the limit; the node's own fail_mode, timeout and shadow_mode override the plan's.
  const plan = node.plan === undefined ? undefined : plans[node.plan]!;
  const limit: LimitPart = plan ? { ...plan, ...definedOnly(node) } : node;
  const policy = parsePolicy(policyInputOf(limit, name) as PolicyInput);
  return {
    ...base,
    policy,
    shadowMode: limit.shadow_mode ?? false,
    unlimited: false,
    ...(node.plan === undefined ? {} : { plan: node.plan }),
  };
}

function definedOnly(node: DescriptorNodeSpec): Partial<LimitPart> {
  const out: Partial<LimitPart> = {};
  if (node.fail_mode !== undefined) out.fail_mode = node.fail_mode;
  if (node.timeout !== undefined) out.timeout = node.timeout;
  if (node.shadow_mode !== undefined) out.shadow_mode = node.shadow_mode;
  return out;
}

/** Freezes data objects all the way down (functions and class instances are left as they are). */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) return value;
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}
