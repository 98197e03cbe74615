// The configuration of a long-running sluice process (serve, worker, dev): command-line flags first,
// then environment variables, then defaults — validated by one zod schema.
import { z } from 'zod';
import { SluiceError } from '../errors.js';
import { describeIssues, issuesOf } from '../validation.js';

export const processConfigSchema = z
  .object({
    /** The rules file (--config, SLUICE_CONFIG). */
    config: z.string().min(1, 'required: --config FILE or SLUICE_CONFIG'),
    /** --redis-url, SLUICE_REDIS_URL. */
    redisUrl: z
      .string()
      .regex(/^(rediss?|redis-cluster|redis-sentinel):\/\//, 'must be a redis://, rediss://, redis-cluster://host:port,... or redis-sentinel://host:port,.../mastername URL'),
    /** --port, PORT (serve). */
    port: z.coerce.number().int().min(0).max(65_535),
    /** --host, HOST (serve). */
    host: z.string().min(1),
    /** Largest request body in bytes (--body-limit, SLUICE_BODY_LIMIT). */
    bodyLimitBytes: z.coerce.number().int().positive(),
    /** Deepest nesting of a JSON request body (SLUICE_JSON_MAX_DEPTH). */
    jsonMaxDepth: z.coerce.number().int().min(1).max(1_000),
    /** HMAC secret for identity hashes (SLUICE_HASH_SECRET). */
    hashSecret: z.string().min(1).optional(),
    /** The admin API's token (SLUICE_ADMIN_TOKEN); hashed when the app starts, never logged. */
    adminToken: z.string().min(16, 'SLUICE_ADMIN_TOKEN: use a long random value (at least 16 characters)').optional(),
    /** Key prefix (SLUICE_PREFIX). */
    prefix: z.string().min(1).optional(),
    /** Handlers running at once per worker process (--concurrency, SLUICE_CONCURRENCY). */
    concurrency: z.coerce.number().int().positive(),
    /** A port where `sluice worker` serves /metrics and /healthz (--metrics-port, SLUICE_METRICS_PORT). */
    metricsPort: z.coerce.number().int().min(0).max(65_535).optional(),
    /**
     * Slow clients (serve, dev): the whole request head must arrive within headersTimeoutMs
     * (--headers-timeout, SLUICE_HEADERS_TIMEOUT_MS), the whole request within requestTimeoutMs
     * (--request-timeout, SLUICE_REQUEST_TIMEOUT_MS; 0 = none), and an idle keep-alive connection is
     * closed after keepAliveTimeoutMs (--keep-alive-timeout, SLUICE_KEEP_ALIVE_TIMEOUT_MS).
     */
    headersTimeoutMs: z.coerce.number().int().positive(),
    requestTimeoutMs: z.coerce.number().int().min(0),
    keepAliveTimeoutMs: z.coerce.number().int().positive(),
    /** pino level (LOG_LEVEL). */
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
  })
  .strict();

export type ProcessConfig = z.infer<typeof processConfigSchema>;

/** Flags as commander gives them. */
export interface ProcessFlags {
  config?: string;
  redisUrl?: string;
  port?: string;
  host?: string;
  bodyLimit?: string;
  concurrency?: string;
  metricsPort?: string;
  headersTimeout?: string;
  requestTimeout?: string;
  keepAliveTimeout?: string;
}

export function resolveProcessConfig(flags: ProcessFlags, processEnv: NodeJS.ProcessEnv = process.env): ProcessConfig {
  // A variable set to the empty string counts as unset (`PORT=` must not mean "any port").
  const env = Object.fromEntries(Object.entries(processEnv).filter(([, v]) => v !== undefined && v !== '')) as NodeJS.ProcessEnv;
  const raw = {
    config: flags.config ?? env.SLUICE_CONFIG ?? '',
    redisUrl: flags.redisUrl ?? env.SLUICE_REDIS_URL ?? 'redis://127.0.0.1:6379',
    port: flags.port ?? env.PORT ?? '8080',
    host: flags.host ?? env.HOST ?? '127.0.0.1',
    bodyLimitBytes: flags.bodyLimit ?? env.SLUICE_BODY_LIMIT ?? String(1024 * 1024),
    jsonMaxDepth: env.SLUICE_JSON_MAX_DEPTH ?? '64',
    ...(env.SLUICE_HASH_SECRET ? { hashSecret: env.SLUICE_HASH_SECRET } : {}),
    ...(env.SLUICE_PREFIX ? { prefix: env.SLUICE_PREFIX } : {}),
    ...(env.SLUICE_ADMIN_TOKEN ? { adminToken: env.SLUICE_ADMIN_TOKEN } : {}),
    concurrency: flags.concurrency ?? env.SLUICE_CONCURRENCY ?? '10',
    ...((flags.metricsPort ?? env.SLUICE_METRICS_PORT) !== undefined ? { metricsPort: flags.metricsPort ?? env.SLUICE_METRICS_PORT } : {}),
    headersTimeoutMs: flags.headersTimeout ?? env.SLUICE_HEADERS_TIMEOUT_MS ?? '10000',
    requestTimeoutMs: flags.requestTimeout ?? env.SLUICE_REQUEST_TIMEOUT_MS ?? '30000',
    keepAliveTimeoutMs: flags.keepAliveTimeout ?? env.SLUICE_KEEP_ALIVE_TIMEOUT_MS ?? '5000',
    logLevel: env.LOG_LEVEL ?? 'info',
  };
  const parsed = processConfigSchema
    .refine((c) => c.requestTimeoutMs === 0 || c.requestTimeoutMs >= c.headersTimeoutMs, {
      path: ['requestTimeoutMs'],
      message: 'must be 0 (none) or at least headersTimeoutMs',
    })
    .safeParse(raw);
  if (!parsed.success) {
    const issues = issuesOf(parsed.error);
    throw new SluiceError('SLUICE_ERR_INVALID_CONFIG', `invalid configuration: ${describeIssues(issues)}`, { details: issues });
  }
  return Object.freeze(parsed.data);
}
