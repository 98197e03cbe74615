// The `sluice` program: builds the commander program from the command registry and runs it with
// an injectable io, so tests drive commands in-process and read their exact output.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { isSluiceError } from '../errors.js';
import { COMMANDS } from './commands.js';
import { processIo, type CliContext, type CliIo, type CommandModule } from './io.js';

/** The package version, from the nearest package.json named sluice (source and dist layouts differ). */
function packageVersion(): string {
  for (const up of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'sluice' && pkg.version) return pkg.version;
    } catch {
      // Not this layout; try the next.
    }
  }
  return '0.0.0';
}

/** The program with every registered command (or `commands`, for tests), writing to `ctx.io`. */
export function buildProgram(ctx: CliContext, commands: readonly CommandModule[] = COMMANDS): Command {
  const program = new Command('sluice')
    .description('Redis-backed job throttler and API rate limiter')
    .version(packageVersion())
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (s) => ctx.io.out(s), writeErr: (s) => ctx.io.err(s) });
  for (const command of commands) command.register(program, ctx);
  return program;
}

/**
 * Runs `sluice <argv...>` and resolves with its exit code: 0 on success, 1 when a command failed
 * (a SluiceError is printed as its message, without a stack), 2 or commander's code on a usage error.
 * @param argv the arguments after the program name.
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  const ctx: CliContext = { io, exitCode: 0 };
  const program = buildProgram(ctx);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ctx.exitCode;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 1 ? 2 : e.exitCode;
    if (isSluiceError(e)) {
      io.err(`${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
