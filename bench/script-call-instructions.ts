// What running a script as a function saves per call (docs/decisions/function-libraries.md): for each
// script, its includes with an empty body (`return 0`), called `--n` times by EVALSHA (the includes'
// functions and tables made on every call) and `--n` times by FCALL of its library (made once at load;
// the per-run state reset on every call), on one redis-server run under valgrind's callgrind. The
// instructions of each phase are read with `callgrind_control -e Ir` before and after it, so the
// difference per call is exactly the work the function form skips (or adds), with the call's fixed
// cost (parsing, lookup, reply) the same on both sides. Counts do not move with the machine's load.
//   npx tsx bench/script-call-instructions.ts [--n 2000] [--scripts throttle-admit,throttle-start,...]
// Needs valgrind. Prints one JSON document on stdout.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { functionLibrary } from '../src/redis/lua-functions.js';
import { resolveNamedIncludes } from '../src/redis/lua-includes.js';
import { luaDir } from '../src/redis/script-forms.js';
import { startCallgrindRedis } from './lib/callgrind-redis.js';

const { values: flags } = parseArgs({
  options: {
    n: { type: 'string', default: '2000' },
    scripts: { type: 'string', default: 'throttle-admit,throttle-start,throttle-dispatch,throttle-release,limits,token-bucket,fixed-window' },
  },
});
const n = Number(flags.n);
if (!(n >= 100 && n <= 100_000)) throw new Error('--n: 100 .. 100000');

const dir = luaDir();
const read = (name: string) => readFileSync(join(dir, 'includes', `${name}.lua`), 'utf8');
const server = await startCallgrindRedis();
const redis = server.client;
const instructions = server.instructions;

/** Instructions per call of `call`, run n times one at a time. */
async function perCall(call: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await call(); // warm
  const before = instructions();
  for (let i = 0; i < n; i++) await call();
  return Math.round((instructions() - before) / n);
}

try {
  // The fixed cost of a script call (EVALSHA of `return 0`), taken off both sides.
  const emptySha = (await redis.script('LOAD', 'return 0')) as string;
  const empty = await perCall(() => redis.evalsha(emptySha, 0));
  const rows = [];
  for (const script of flags.scripts.split(',')) {
    const source = readFileSync(join(dir, `${script}.lua`), 'utf8');
    const includes = resolveNamedIncludes(source, read);
    const evalText = [...includes.map((inc) => inc.text), 'return 0'].join('\n');
    const sha = (await redis.script('LOAD', evalText)) as string;
    const lib = functionLibrary(`probe-${script}`, { includes, body: 'return 0' });
    await redis.call('FUNCTION', 'LOAD', 'REPLACE', lib.code);
    const evalsha = await perCall(() => redis.evalsha(sha, 0));
    const fcall = await perCall(() => redis.call('FCALL', lib.fn, '0'));
    rows.push({ script, includes: includes.map((inc) => inc.name), evalshaIncludesOnly: evalsha - empty, fcallIncludesOnly: fcall - empty, savedPerCall: evalsha - fcall });
    process.stderr.write(`[script-call-instructions] ${script}: EVALSHA ${evalsha}, FCALL ${fcall}\n`);
  }
  console.log(JSON.stringify({ bench: 'script-call-instructions', at: new Date().toISOString(), n, emptyScriptCall: empty, rows }, null, 1));
} finally {
  await server.dispose();
}
