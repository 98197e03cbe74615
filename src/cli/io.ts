// Where a command writes and the exit code it ends with (process streams in production, buffers in
// tests that run commands in-process), and the shape of a command module.
import type { Command } from 'commander';

/** The output side of one CLI run. */
export interface CliIo {
  /** Writes to standard output (text is written as given; commands end their lines). */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
}

/** What a command's action gets: where to write, and how to set the exit code. */
export interface CliContext {
  readonly io: CliIo;
  /** The process exit code when the run ends (0 unless a command sets it). */
  exitCode: number;
}

/** Writes to this process's stdout and stderr. */
export const processIo: CliIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

/** An io that keeps what was written, for tests and for callers that want the text. */
export function bufferIo(): CliIo & { stdout(): string; stderr(): string } {
  let out = '';
  let err = '';
  return {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    stdout: () => out,
    stderr: () => err,
  };
}

/** A subcommand: its name, and how it adds itself (arguments, options, help, action) to the program. */
export interface CommandModule {
  readonly name: string;
  register(program: Command, ctx: CliContext): void;
}
