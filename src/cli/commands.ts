// The command registry: every `sluice` subcommand, each in its own file. The program adds them in
// this order, so `sluice --help` lists them so.
import { adminCommand } from './admin.js';
import { checkConfigCommand } from './check-config.js';
import type { CommandModule } from './io.js';
import { devCommand, serveCommand, workerCommand } from './serve.js';
import { simulateCommand } from './simulate.js';

/** What a registered command provides (defined in io.ts, a leaf, so commands never import this registry). */
export type { CommandModule } from './io.js';

/** The registered commands. */
export const COMMANDS: readonly CommandModule[] = [serveCommand, workerCommand, devCommand, checkConfigCommand, simulateCommand, adminCommand];
