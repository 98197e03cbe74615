// What createApp needs: the sluice instance, the rules in force, metrics, a logger, and limits.
import type { Logger } from 'pino';
import type { ControlCache } from '../admin/control-cache.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Sluice } from '../sluice.js';
import type { HeaderSelection } from '../headers/headers.js';
import type { RulesSource } from '../rules/rules-source.js';

export interface AppDeps {
  sluice: Sluice;
  rules: RulesSource;
  metrics: Metrics;
  logger: Logger;
  /** Largest JSON body accepted, in bytes (default 1 MiB); larger bodies get 413. */
  bodyLimitBytes?: number;
  /** Deepest nesting of arrays and objects accepted in a JSON body (default 64); deeper bodies get 400. */
  jsonMaxDepth?: number;
  /** Which rate-limit header sets to send. */
  headers?: HeaderSelection;
  /** The admin token (SLUICE_ADMIN_TOKEN); absent: every admin route answers 401. Hashed at once, never logged. */
  adminToken?: string;
  /**
   * True for `sluice serve`: rules without an `auth:` section accept no key (401) instead of letting
   * everyone in, so a reload that drops the section closes the service. Default false (in-process apps).
   */
  requireAuth?: boolean;
  /** How long an SSE client's socket may take nothing before the stream is dropped (ms, default 30,000). */
  sseStallMs?: number;
  /** The process's control cache (drain, pause, overrides), already started; absent: the app makes its own. @internal */
  control?: ControlCache;
}

export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;

/**
 * Default deepest nesting of a JSON body. Far beyond any real payload, far below what exhausts a
 * stack: everything that walks a body afterwards (zod, JSON.stringify, BullMQ, handlers) may recurse.
 */
export const DEFAULT_JSON_MAX_DEPTH = 64;
