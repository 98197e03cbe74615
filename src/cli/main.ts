#!/usr/bin/env node
// The `sluice` executable (package bin; builds to dist/src/cli/main.js). All it does is run the
// program on this process's arguments and streams.
import { runCli } from './program.js';

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
