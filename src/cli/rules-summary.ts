// A readable summary of valid rules (what `sluice check-config` prints): domains and their rules
// with the effective policies, plans, route groups, the HTTP mapping and the queues, plus warnings
// about this environment (unset variables, missing handler modules).
import { existsSync } from 'node:fs';
import type { Rules } from '../rules/compile.js';
import { describePolicy, formatNumber } from '../rules/describe.js';
import { formatDuration } from '../rules/duration.js';
import type { QueueRule } from '../rules/queues.js';
import { DEFAULT_IPV4_PREFIX, DEFAULT_IPV6_PREFIX } from '../request/identity.js';

/** The summary text (ending with a newline). `env` is where handler variables are looked up. */
export function rulesSummary(rules: Rules, env: Readonly<Record<string, string | undefined>> = process.env): string {
  const lines: string[] = [`${rules.file}: valid (version ${rules.version})`];

  for (const domain of rules.domains) {
    const list = rules.rules.filter((r) => r.domain === domain);
    lines.push('', `domain ${domain} (${list.length} rule${list.length === 1 ? '' : 's'})`);
    for (const r of list) {
      const flags = [r.shadowMode ? 'shadow mode' : '', `line ${r.source.line}`].filter(Boolean).join(', ');
      lines.push(`  ${r.id}  [${r.name}] (${flags})`);
      if (r.unlimited) lines.push('      unlimited');
      else lines.push(`      ${r.plan ? `plan ${r.plan}: ` : ''}${describePolicy(r.policy!)}`);
    }
  }

  const plans = Object.entries(rules.plans);
  if (plans.length) {
    lines.push('', 'plans');
    const width = Math.max(...plans.map(([n]) => n.length));
    for (const [name, p] of plans) lines.push(`  ${name.padEnd(width)}  ${describePolicy(p)}`);
  }

  const groups = Object.entries(rules.routeGroups);
  if (groups.length) {
    lines.push('', 'route groups');
    const width = Math.max(...groups.map(([n]) => n.length));
    for (const [name, g] of groups) {
      lines.push(`  ${name.padEnd(width)}  ${g.paths.join(', ')}${g.methods ? `  [${g.methods.join(', ')}]` : ''}`);
    }
  }

  if (rules.http) {
    const h = rules.http;
    const proxies = h.trustedProxies.length ? h.trustedProxies.join(', ') : 'none (X-Forwarded-For ignored)';
    lines.push('', `http (domain ${h.domain})`);
    lines.push(`  trusted proxies: ${proxies}`);
    // The effective grouping of per-IP limits, and whether it is the default (which has changed: /64 -> /56).
    const def = (value: number, fallback: number) => (value === fallback ? ' (default)' : '');
    lines.push(
      `  client networks (one per-IP client): IPv4 /${h.ipv4Prefix}${def(h.ipv4Prefix, DEFAULT_IPV4_PREFIX)}, IPv6 /${h.ipv6Prefix}${def(h.ipv6Prefix, DEFAULT_IPV6_PREFIX)}; API key header ${h.apiKeyHeader} (hashed)`,
    );
    const templates = h.templates.map((t) => `[${t.map((e) => (e.value !== undefined ? `${e.key}=${e.value}` : e.source === e.key ? e.key : `${e.key}<-${e.source}`)).join(', ')}]`);
    lines.push(`  descriptors: ${templates.join(' ')}`);
  }

  const warnings: string[] = [];
  if (rules.queues.length) {
    lines.push('', 'queues');
    for (const q of rules.queues) {
      lines.push(`  ${q.name}: ${queueText(q)}`);
      lines.push(`      handler ${handlerText(q)}`);
      for (const quota of q.throttle.quotas ?? []) lines.push(`      quota ${quotaText(quota)}`);
      warnings.push(...queueWarnings(q, env));
    }
  }

  if (warnings.length) lines.push('', 'warnings', ...warnings.map((w) => `  ${w}`));
  return lines.join('\n') + '\n';
}

/** One spend quota as the file means it: `500 calls per key per day (Europe/Berlin), refuse`. */
function quotaText(q: NonNullable<QueueRule['throttle']['quotas']>[number]): string {
  const zone = q.timeZone ?? 'UTC';
  return `${q.limit} ${q.unit ?? 'calls'} per ${q.scope === 'key' ? 'key' : 'queue'} per ${q.period} (${zone}), ${q.whenExhausted ?? 'refuse'}`;
}

function queueText(q: QueueRule): string {
  const t = q.throttle;
  const parts = [`${formatNumber(t.ratePerSecond)}/s per key`, `capacity ${t.capacity}`];
  if (t.burst !== undefined) parts.push(`burst ${t.burst}`);
  if (t.maxWaitMs !== undefined) parts.push(`max wait ${formatDuration(t.maxWaitMs)}`);
  if (t.globalRatePerSecond !== undefined) parts.push(`global ${formatNumber(t.globalRatePerSecond)}/s`);
  if (t.attempts !== undefined) parts.push(`${t.attempts} attempts`);
  if (t.backoff) parts.push(`${t.backoff.type} backoff ${formatDuration(t.backoff.delayMs)}`);
  if (t.maxPayloadBytes !== undefined) parts.push(`payload <= ${t.maxPayloadBytes} bytes`);
  parts.push(`key from ${q.key.type === 'header' ? `header ${q.key.name}` : q.key.type}`);
  return parts.join(', ');
}

function handlerText(q: QueueRule): string {
  const h = q.handler;
  if (h.type === 'module') return `module ${h.path}${h.exportName === 'default' ? '' : ` (export ${h.exportName})`}`;
  const headers = Object.entries(h.headers).map(([n, v]) => ('env' in v ? `${n} from $${v.env}` : `${n} literal`));
  return `http ${h.method} ${h.url} (timeout ${formatDuration(h.timeoutMs)}${headers.length ? `; headers ${headers.join(', ')}` : ''})`;
}

function queueWarnings(q: QueueRule, env: Readonly<Record<string, string | undefined>>): string[] {
  const h = q.handler;
  if (h.type === 'module') return existsSync(h.path) ? [] : [`queue ${q.name}: handler module ${h.path} does not exist`];
  return Object.values(h.headers)
    .filter((v): v is { env: string } => 'env' in v && env[v.env] === undefined)
    .map((v) => `queue ${q.name}: environment variable ${v.env} is not set here`);
}
