#!/usr/bin/env node
// The `sluice` executable (package bin; builds to dist/src/cli/main.js). All it does is run the
// program on this process's arguments and streams, with one V8 setting of its own first.
//
// V8's allocation-site pretenuring is off in sluice's processes. A server started under traffic has
// requests waiting for its Redis connection, so every object they allocated survives the first
// scavenge, and V8 may then decide to allocate at those sites in the old generation for the life of the
// process: each request's objects are promoted and collected by major GCs from then on. With three
// rules, 6 cold starts in 8 ended that way (~638 kB promoted per scavenge instead of ~46 kB), and the
// median Node CPU per request was 17.5 µs against 14.3 with the decision off (bench/pretenuring.ts,
// docs/benchmarks.md). Set before the program's modules are loaded; an app that embeds the middleware
// can do the same, or start node with the flag (NODE_OPTIONS refuses it; docs/operations.md).
import { setFlagsFromString } from 'node:v8';

setFlagsFromString('--no-allocation-site-pretenuring');
const { runCli } = await import('./program.js');

runCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
