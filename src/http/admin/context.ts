// What the admin routes share: the control store and cache, the audit log, the scripts, the admin
// token; and the small steps every admin route takes (find the queue, parse a part of the request,
// record the action).
import type { Request, Response } from 'express';
import type { z } from 'zod';
import { AuditLog } from '../../admin/audit.js';
import { ControlCache } from '../../admin/control-cache.js';
import { ControlKeys } from '../../admin/control-keys.js';
import { ControlStore } from '../../admin/control-store.js';
import { AdminToken } from '../../auth/admin-token.js';
import { SluiceError } from '../../errors.js';
import { ScriptRegistry } from '../../redis/scripts.js';
import { whenReady } from '../../redis/connection.js';
import { ThrottleKeys } from '../../throttle/keys.js';
import type { Throttle } from '../../throttle/throttle.js';
import { describeIssues, issuesOf } from '../../validation.js';
import type { AppDeps } from '../deps.js';
import type { QueueThrottles } from '../queue-throttles.js';
import type { QueueRule } from '../../rules/index.js';

export interface AdminContext {
  deps: AppDeps;
  throttles: QueueThrottles;
  token: AdminToken;
  keys: ControlKeys;
  store: ControlStore;
  cache: ControlCache;
  audit: AuditLog;
  scripts: ScriptRegistry;
}

/** The admin context of an app: the cache given (a process's, polled) or one made here. */
export function adminContext(deps: AppDeps, throttles: QueueThrottles): AdminContext {
  const { sluice } = deps;
  const keys = new ControlKeys(sluice.keys);
  const cache =
    deps.control ??
    new ControlCache(sluice.redis, keys, (q) => new ThrottleKeys(sluice.keys, q), () => deps.rules.current().queues.map((q) => q.name));
  if (!deps.control) {
    // An app made without a process around it (tests, embedding): it follows the control state itself.
    void cache.start();
    sluice.useOverrides(cache);
  }
  return {
    deps,
    throttles,
    token: new AdminToken(deps.adminToken),
    keys,
    store: new ControlStore(sluice.redis, keys),
    cache,
    audit: new AuditLog(sluice.redis, keys.audit),
    scripts: new ScriptRegistry(sluice.redis),
  };
}

/** Parses a part of the request (path parameters, query) with its schema; 400 naming each field. */
export function parsePart<S extends z.ZodType>(schema: S, value: unknown, part: string): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issues = issuesOf(parsed.error);
  throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', `invalid ${part}: ${describeIssues(issues)}`, { details: issues });
}

/** The queue of the rules in force and its throttle; 404 when the rules have no such queue. */
export async function queueOf(ctx: AdminContext, name: string): Promise<{ queue: QueueRule; throttle: Throttle }> {
  const queue = ctx.deps.rules.current().queue(name);
  if (!queue) throw new SluiceError('SLUICE_ERR_NOT_FOUND', `no queue '${name}'`);
  await whenReady(ctx.deps.sluice.redis, 2_000);
  return { queue, throttle: ctx.throttles.of(queue) };
}

/** Who the request says it is (X-Sluice-Actor, e.g. the CLI's $USER); `admin` when unnamed. */
export function actorOf(req: Request): string {
  const name = req.headers['x-sluice-actor'];
  const value = (Array.isArray(name) ? name[0] : name)?.trim();
  return value && /^[\w.@+-]{1,64}$/.test(value) ? value : 'admin';
}

/** Records an admin action in the audit stream and makes every process of this app see the change now. */
export async function record(ctx: AdminContext, req: Request, action: string, fields: { queue?: string; target?: string; details?: unknown }): Promise<void> {
  await ctx.audit.record({ who: actorOf(req), token: ctx.token.fingerprint ?? '', action, ...fields });
  ctx.deps.logger.info({ event: 'admin', action, who: actorOf(req), queue: fields.queue, target: fields.target }, 'admin action');
  await ctx.cache.refresh(true);
}

export const iso = (ms: number | undefined): string | undefined => (ms === undefined ? undefined : new Date(ms).toISOString());

/** Sends `body` parsed by its documented schema: an answer never strays from the OpenAPI document. */
export function send<S extends z.ZodType>(res: Response, status: number, schema: S, body: z.input<S>): void {
  res.status(status).json(schema.parse(body));
}
