// The composition root: wires Redis, the rules watcher, metrics, the HTTP listener and the queue
// workers of one process, and shuts them down in order on SIGTERM/SIGINT.
import type { LiveWaits } from '../http/live/live-waits.js';
import { createServer, type Server, type ServerOptions } from 'node:http';
import { pino, type Logger } from 'pino';
import { SluiceError } from '../errors.js';
import { Metrics } from '../metrics/metrics.js';
import { loadRules, watchRules, type QueueRule, type RulesWatcher } from '../rules/index.js';
import { createSluice, type Sluice } from '../sluice.js';
import type { ProcessConfig } from './process-config.js';
import { checkHashSecret } from './hash-secret.js';
import { loadWorkersEntry } from '../workers-entry.js';
import { WorkerReloader } from './worker-reload.js';
import { checkMemoryPolicy } from './memory-policy-check.js';
import { watchAuthErrors } from './redis-auth-check.js';
import { LiveFigures } from '../admin/figures.js';
import { startControlPlane, withFigures, type ControlPlane } from './control-plane.js';

export interface RuntimeParts {
  server: boolean;
  workers: boolean;
  /** `sluice dev`: a rules file without an `auth:` section runs as `auth: none` (with a warning) instead of being refused. */
  devAuth?: boolean;
}

export interface Runtime {
  sluice: Sluice;
  logger: Logger;
  /** The bound address, when serving. */
  address?: { host: string; port: number };
  /** Stops accepting, finishes in-flight requests and jobs, closes Redis. Idempotent. */
  close(): Promise<void>;
  /** Resolves once close() has finished. */
  closed: Promise<void>;
}

/** How long a starting process waits for Redis before it takes traffic anyway. */
const READY_WAIT_MS = 10_000;

export async function startRuntime(config: ProcessConfig, parts: RuntimeParts): Promise<Runtime> {
  const logger = pino({ level: config.logLevel, base: { service: 'sluice', pid: process.pid } });
  const secret = checkHashSecret(config.hashSecret, process.env.SLUICE_REQUIRE_HASH_SECRET);
  if (secret.action === 'refuse') throw secret.error;
  if (secret.action === 'warn') logger.warn({ event: 'hash_secret_unset' }, secret.message);
  const metrics = new Metrics({ defaultMetrics: true });
  // Fail fast on a bad file: the error names every problem with its line.
  const initial = loadRules(config.config);
  if (parts.server && initial.auth === undefined && !parts.devAuth) {
    throw new SluiceError(
      'SLUICE_ERR_INVALID_CONFIG',
      `${config.config}: no auth section: add auth.tenants (API keys, see docs/operations.md#security), or \`auth: none\` to serve without authentication`,
    );
  }
  if (parts.server && initial.auth === undefined) {
    logger.warn({ event: 'auth_none' }, 'no auth section in the rules file: dev runs without authentication (auth: none); sluice serve would refuse to start');
  }
  const figures = new LiveFigures();
  const sluice = createSluice({
    redis: config.redisUrl,
    observer: withFigures(metrics, figures),
    ...(config.hashSecret ? { hashSecret: config.hashSecret } : {}),
    ...(config.prefix ? { prefix: config.prefix } : {}),
  });

  // Advisory, in the background: a start never waits on it or fails for it.
  void checkMemoryPolicy(sluice.redis, logger);
  watchAuthErrors(sluice.redis, logger);

  let watcher: RulesWatcher | undefined;
  let server: Server | undefined;
  let appLocals: { closeStreams?: () => void } | undefined;
  let liveWaits: LiveWaits | undefined;
  let address: Runtime['address'];
  let control: ControlPlane | undefined;

  // Workers follow the rules file too: when a queue's settings or handler change, they restart on
  // the new ones (after the jobs in flight finish), so the gate enforces what admission uses.
  let reloader: WorkerReloader | undefined;

  try {
    // Take no traffic before the client is connected (on a cluster: knows the slots), so that the first
    // decisions are not spent waiting for it. Redis down at start is not fatal: decisions then follow
    // their fail mode and submits answer 503, as during any outage, and the client keeps reconnecting.
    await sluice.ready(READY_WAIT_MS).catch((error: unknown) =>
      logger.warn({ event: 'redis_not_ready', waitedMs: READY_WAIT_MS, err: error }, 'Redis not ready; starting anyway (decisions follow their fail mode)'),
    );
    watcher = watchRules(config.config, {
      logger,
      onChange: (next) => {
        metrics.recordRulesReload('applied');
        logger.info({ event: 'rules_reloaded', rulesVersion: next.version }, 'rules reloaded');
        if (reloader) void reloader.reload(next.queues, next.version);
        watchQuotas(next.queues);
      },
      onError: () => metrics.recordRulesReload('refused'),
    });
    // Figures read from Redis at each scrape, under the rules in force: units taken for started (workers
    // silent a second past a start, sluice_throttle_silent_units) and queue-wide spend quotas (sluice_quota_used).
    const throttleInForce = (name: string) => {
      const queue = watcher!.current().queues.find((q) => q.name === name);
      return queue ? sluice.throttle(queue.name, queue.throttle) : undefined;
    };
    const watchQuotas = (queues: readonly QueueRule[]) => {
      for (const queue of queues) {
        metrics.watchSilentUnits(queue.name, async () => (await throttleInForce(queue.name)?.silentUnits()) ?? 0);
        if (!queue.throttle.quotas?.some((q) => q.scope === 'queue')) continue;
        metrics.watchQuotas(queue.name, async () => (await throttleInForce(queue.name)?.quotaUse(undefined)) ?? []);
      }
    };
    watchQuotas(watcher.current().queues);
    // Overrides, drain and pause flags, followed within 250 ms of any change; before the app and the workers start.
    control = await startControlPlane(sluice, watcher, figures, logger);
    if (parts.server) {
      const createApp = await loadCreateApp();
      const app = createApp({
        sluice,
        rules: watcher,
        metrics,
        logger,
        bodyLimitBytes: config.bodyLimitBytes,
        jsonMaxDepth: config.jsonMaxDepth,
        control: control!.cache,
        requireAuth: !parts.devAuth,
        ...(config.adminToken ? { adminToken: config.adminToken } : {}),
      });
      appLocals = app.locals as { closeStreams?: () => void };
      liveWaits = app.locals.liveWaits as LiveWaits | undefined;
      server = await new Promise<Server>((resolve, reject) => {
        const s = createServer(slowClientOptions(config), app);
        s.keepAliveTimeout = config.keepAliveTimeoutMs;
        s.listen(config.port, config.host, () => resolve(s));
        s.once('error', reject);
      });
      const bound = server.address();
      address = typeof bound === 'object' && bound ? { host: config.host, port: bound.port } : { host: config.host, port: config.port };
      logger.info({ event: 'listening', url: `http://${address.host}:${address.port}`, rulesVersion: initial.version }, 'sluice serve listening');
    }

    if (parts.workers && !parts.server && config.metricsPort !== undefined) {
      // A worker-only process has no HTTP app: a small listener exposes its metrics and liveness.
      server = createServer((req, res) => {
        if (req.url === '/metrics') {
          void metrics.text().then((text) => res.writeHead(200, { 'Content-Type': metrics.contentType }).end(text));
        } else if (req.url === '/healthz') {
          res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"status":"ok"}');
        } else {
          res.writeHead(404).end();
        }
      });
      await new Promise<void>((resolve, reject) => server!.listen(config.metricsPort, config.host, resolve).once('error', reject));
      const bound = server.address();
      address = { host: config.host, port: typeof bound === 'object' && bound ? bound.port : config.metricsPort! };
      logger.info({ event: 'metrics_listening', url: `http://${address.host}:${address.port}/metrics` }, 'worker metrics listening');
    }

    if (parts.workers) {
      const mod = await loadWorkersEntry();
      const workers = new WorkerReloader((queues) => mod.runWorkers(sluice, queues, { concurrency: config.concurrency, collectAtStart: true }), logger);
      const running = await workers.startInitial(initial.queues);
      reloader = workers;
      logger.info({ event: 'workers_ready', queues: running.queues }, 'sluice workers ready');
    }
  } catch (error) {
    // A failed start (a missing environment variable, a handler module that does not load, a port in
    // use) must end the process: close what was opened, or its sockets and timers keep it alive.
    watcher?.close();
    server?.close();
    await control?.close();
    await sluice.close().catch(() => undefined);
    throw error;
  }

  let closing: Promise<void> | undefined;
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const close = () => {
    closing ??= (async () => {
      logger.info({ event: 'shutting_down' }, 'shutting down');
      reloader?.stopReloading();
      if (server) {
        const s = server;
        // Stop accepting; in-flight requests finish; idle keep-alive sockets are closed now.
        const stopped = new Promise<void>((r) => s.close(() => r()));
        s.closeIdleConnections();
        // Open dashboard streams never finish by themselves: end them (the browser reconnects elsewhere).
        appLocals?.closeStreams?.();
        // Long-polls answer now and event streams end: they would otherwise hold the close open.
        liveWaits?.abortAll();
        await stopped;
      }
      watcher?.close();
      await reloader?.close();
      // After the workers: the starts of their last jobs are counted in the figures first.
      await control?.close();
      await sluice.close();
      logger.info({ event: 'stopped' }, 'stopped');
      resolveClosed();
    })();
    return closing;
  };
  return { sluice, logger, ...(address ? { address } : {}), close, closed };
}

/**
 * Limits on slow clients (docs/operations.md#slow-clients). Node checks headersTimeout and
 * requestTimeout every connectionsCheckingInterval (default 30 s, which would let a slowloris
 * connection live that long past its limit): checked every second, or sooner for short limits.
 */
function slowClientOptions(config: ProcessConfig): ServerOptions {
  const shortest = Math.min(config.headersTimeoutMs, config.requestTimeoutMs || Number.POSITIVE_INFINITY);
  return {
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(shortest / 4))),
  };
}

/** How long a signalled process may take to stop before it is forced out. */
export const SHUTDOWN_GRACE_MS = 25_000;

/**
 * Closes the runtime on SIGTERM or SIGINT (a second signal, or `graceMs`, forces the exit, and the log
 * says so: a forced exit cuts off requests and jobs, which a reader of the log must be able to tell).
 */
export function closeOnSignals(
  runtime: Pick<Runtime, 'logger' | 'close'>,
  options: { graceMs?: number; exit?: (code: number) => void; on?: (signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void) => void } = {},
): void {
  const graceMs = options.graceMs ?? SHUTDOWN_GRACE_MS;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const on = options.on ?? ((signal, listener) => void process.on(signal, listener));
  let signalledAt = 0;
  let signalled = false;
  const forced = (reason: 'second_signal' | 'grace_period_expired', signal?: NodeJS.Signals) => {
    runtime.logger.error(
      { event: 'shutdown_forced', reason, graceMs, waitedMs: Date.now() - signalledAt, ...(signal ? { signal } : {}) },
      reason === 'second_signal' ? 'second signal: forcing exit before shutdown finished' : `shutdown not finished within ${graceMs} ms: forcing exit`,
    );
    exit(1);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) return forced('second_signal', signal);
    signalled = true;
    signalledAt = Date.now();
    runtime.logger.info({ event: 'signal', signal }, 'signal received');
    const force = setTimeout(() => forced('grace_period_expired'), graceMs);
    force.unref();
    void runtime.close().then(() => clearTimeout(force));
  };
  on('SIGTERM', onSignal);
  on('SIGINT', onSignal);
}

/**
 * The HTTP app, loaded only by a process that serves: express is an optional peer dependency of
 * sluice, so `sluice worker`, `check-config` and `simulate` must run where it is not installed.
 */
async function loadCreateApp(): Promise<typeof import('../http/app.js').createApp> {
  try {
    return (await import('../http/app.js')).createApp;
  } catch (error) {
    const e = error as { code?: string; message?: string };
    if (e?.code === 'ERR_MODULE_NOT_FOUND' && /'express'/.test(e.message ?? '')) {
      throw new SluiceError('SLUICE_ERR_INVALID_CONFIG', 'sluice serve and sluice dev need express 5, an optional peer dependency of sluice: npm install express@5', {
        cause: error,
      });
    }
    throw error;
  }
}
