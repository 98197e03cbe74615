// `sluice serve`, `sluice worker` and `sluice dev`: the long-running processes.
import type { Command } from 'commander';
import { ensureLocalRedis } from './ensure-redis.js';
import type { CliContext, CommandModule } from './io.js';
import { resolveProcessConfig, type ProcessFlags } from './process-config.js';
import { closeOnSignals, startRuntime, type RuntimeParts } from './runtime.js';

function withProcessOptions(command: Command, serving: boolean, workers: boolean): Command {
  command
    .option('--config <file>', 'the rules file (env SLUICE_CONFIG)')
    .option('--redis-url <url>', 'Redis URL (env SLUICE_REDIS_URL, default redis://127.0.0.1:6379)');
  if (serving) {
    command
      .option('--port <n>', 'port to listen on (env PORT, default 8080; 0 = any free port)')
      .option('--host <host>', 'address to listen on (env HOST, default 127.0.0.1)')
      .option('--body-limit <bytes>', 'largest request body (env SLUICE_BODY_LIMIT, default 1 MiB)')
      .option('--headers-timeout <ms>', 'the request head must arrive within this (env SLUICE_HEADERS_TIMEOUT_MS, default 10000)')
      .option('--request-timeout <ms>', 'the whole request must arrive within this; 0 = none (env SLUICE_REQUEST_TIMEOUT_MS, default 30000)')
      .option('--keep-alive-timeout <ms>', 'idle keep-alive connections close after this (env SLUICE_KEEP_ALIVE_TIMEOUT_MS, default 5000)');
  }
  if (!serving) command.option('--metrics-port <n>', 'serve /metrics and /healthz on this port (env SLUICE_METRICS_PORT)');
  if (!workers) return command;
  return command.option('--concurrency <n>', 'handlers running at once per queue (env SLUICE_CONCURRENCY, default 10)');
}

async function run(ctx: CliContext, flags: ProcessFlags, parts: RuntimeParts, startRedis: boolean): Promise<void> {
  const config = resolveProcessConfig(flags);
  const child = startRedis ? await ensureLocalRedis(config.redisUrl, (m) => ctx.io.err(`${m}\n`)) : undefined;
  const runtime = await startRuntime(config, parts);
  closeOnSignals(runtime);
  await runtime.closed;
  child?.kill();
}

export const serveCommand: CommandModule = {
  name: 'serve',
  register(program, ctx) {
    withProcessOptions(program.command('serve').description('run the HTTP service (submit, job status, decisions, health, metrics)'), true, false).action(
      (flags: ProcessFlags) => run(ctx, flags, { server: true, workers: false }, false),
    );
  },
};

export const workerCommand: CommandModule = {
  name: 'worker',
  register(program, ctx) {
    withProcessOptions(program.command('worker').description('run the workers of every queue in the rules file'), false, true).action((flags: ProcessFlags) =>
      run(ctx, flags, { server: false, workers: true }, false),
    );
  },
};

export const devCommand: CommandModule = {
  name: 'dev',
  register(program, ctx) {
    withProcessOptions(
      program.command('dev').description('server and workers in one process; starts a local redis-server when none answers'),
      true,
      true,
    ).action((flags: ProcessFlags) => run(ctx, flags, { server: true, workers: true, devAuth: true }, true));
  },
};
