// Runs the sluice CLI in-process (exact output, fast) or as a real process through tsx.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { bufferIo } from '../../../src/cli/io.js';
import { runCli } from '../../../src/cli/program.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `sluice <args>` in this process. */
export async function cli(...args: string[]): Promise<CliRun> {
  const io = bufferIo();
  const code = await runCli(args, io);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

export const MAIN = fileURLToPath(new URL('../../../src/cli/main.ts', import.meta.url));

/** `node --import tsx src/cli/main.ts <args>` as a child process. */
export function cliProcess(args: string[], env: Record<string, string> = {}): CliRun {
  const r = spawnSync(process.execPath, ['--import', 'tsx', MAIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 30_000 });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}
