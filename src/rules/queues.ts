// The compiled `queues:` section: each queue's throttle settings (the throttle's own config fields,
// see queue-throttle.ts), where its lane key comes from, and its handler.
import { isAbsolute, resolve } from 'node:path';
import type { QueueSpec } from './queue-schema.js';
import { throttleSettingsOf, type QueueThrottleSettings } from './queue-throttle.js';

export type { QueueThrottleSettings } from './queue-throttle.js';

/** Where a job's lane key comes from. */
export type QueueKeySource =
  | { readonly type: 'tenant' }
  | { readonly type: 'body' }
  | { readonly type: 'api_key' }
  | { readonly type: 'user' }
  | { readonly type: 'ip' }
  | { readonly type: 'header'; readonly name: string };

/** An upstream header value: from an environment variable, or a literal for non-secret headers. */
export type HeaderValueSource = { readonly env: string } | { readonly value: string };

/** Forward the job's payload to an upstream HTTP API; its status and body become the result. */
export interface HttpHandlerRule {
  readonly type: 'http';
  readonly url: string;
  /** Default POST. */
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Default 10 s. */
  readonly timeoutMs: number;
  readonly headers: Readonly<Record<string, HeaderValueSource>>;
  /** Where the actual cost is in an answer (the queue counts points or tokens); absent: calls. */
  readonly costFrom?: 'graphql' | 'openai_usage';
}

/** Run an exported function of a JS/TS module. */
export interface ModuleHandlerRule {
  readonly type: 'module';
  /** Absolute path (the file gives it relative to the rules file). */
  readonly path: string;
  /** Export name, default `default`. */
  readonly exportName: string;
}

/** One queue of the rules file. */
export interface QueueRule {
  readonly name: string;
  readonly throttle: QueueThrottleSettings;
  /**
   * Default `tenant` under authentication (the lane is the tenant), else `body` (the submit body's
   * `key`). Under authentication every other source is scoped by tenant: `<tenant>/<value>`.
   */
  readonly key: QueueKeySource;
  readonly handler: HttpHandlerRule | ModuleHandlerRule;
}

/** Default upstream timeout of an http handler. */
export const DEFAULT_HANDLER_TIMEOUT_MS = 10_000;

/**
 * Compiles one validated queue; module paths resolve against `baseDir` (the rules file's folder);
 * `tenants`: the rules authenticate tenants (the default lane key is then the tenant).
 */
export function compileQueue(q: QueueSpec, baseDir: string, tenants = false): QueueRule {
  const keyText = q.key ?? (tenants ? 'tenant' : 'body');
  const key: QueueKeySource = keyText.startsWith('header:')
    ? { type: 'header', name: keyText.slice('header:'.length) }
    : { type: keyText as 'tenant' | 'body' | 'api_key' | 'user' | 'ip' };

  const h = q.handler;
  const handler: HttpHandlerRule | ModuleHandlerRule =
    h.type === 'http'
      ? {
          type: 'http',
          url: h.url,
          method: h.method ?? 'POST',
          timeoutMs: h.timeout ?? DEFAULT_HANDLER_TIMEOUT_MS,
          headers: Object.fromEntries(Object.entries(h.headers ?? {}).map(([n, v]) => [n, typeof v === 'string' ? { value: v } : { env: v.env }])),
          ...(h.cost_from !== undefined ? { costFrom: h.cost_from } : {}),
        }
      : { type: 'module', path: isAbsolute(h.path) ? h.path : resolve(baseDir, h.path), exportName: h.export ?? 'default' };

  return { name: q.name, throttle: throttleSettingsOf(q), key, handler };
}
