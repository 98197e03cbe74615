// The command registry: every `sluice` subcommand, each in its own file. The program adds them in
// this order, so `sluice --help` lists them so.
import { checkConfigCommand } from './check-config.js';
import type { CommandModule } from './io.js';
import { simulateCommand } from './simulate.js';

/** What a registered command provides (defined in io.ts, a leaf, so commands never import this registry). */
export type { CommandModule } from './io.js';

/**
 * The registered commands.
 *
 * ADD HERE: `serve` (HTTP server: --config FILE, --redis-url URL, --port N; env SLUICE_CONFIG,
 * SLUICE_REDIS_URL, PORT), `worker` (queue workers: --config, --redis-url) and `dev` (server and
 * worker in one process). Each goes in its own file exporting a CommandModule, listed below.
 */
export const COMMANDS: readonly CommandModule[] = [checkConfigCommand, simulateCommand];
