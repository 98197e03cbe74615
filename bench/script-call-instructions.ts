// What running a script as a function saves per call (docs/decisions/function-libraries.md): for each
// script, its includes with an empty body (`return 0`), called `--n` times by EVALSHA (the includes'
// functions and tables made on every call) and `--n` times by FCALL of its library (made once at load;
// the per-run state reset on every call), on one redis-server run under valgrind's callgrind. The
// instructions of each phase are read with `callgrind_control -e Ir` before and after it, so the
// difference per call is exactly the work the function form skips (or adds), with the call's fixed
// cost (parsing, lookup, reply) the same on both sides. Counts do not move with the machine's load.
//   npx tsx bench/script-call-instructions.ts [--n 2000] [--scripts throttle-admit,throttle-start,...]
// Needs valgrind. Prints one JSON document on stdout.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { functionLibrary } from '../src/redis/lua-functions.js';
import { resolveNamedIncludes } from '../src/redis/lua-includes.js';
import { luaDir } from '../src/redis/scripts.js';
import { freePort } from '../test/helpers/redis-server.js';

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
const work = mkdtempSync(join(tmpdir(), 'sluice-cg-'));
const port = await freePort();
const server = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${join(work, 'cg.out')}`, '-q', 'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
const redis = new Redis(port, '127.0.0.1', { retryStrategy: () => 100 });
redis.on('error', () => undefined); // refused until valgrind's redis-server listens

/** Instructions the server has run so far (callgrind's live counter). */
function instructions(): number {
  const out = execFileSync('callgrind_control', ['-e', 'Ir', String(server.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  // One line per thread under "Totals:", `Th <i>  <count>`: summed.
  const threads = [...out.matchAll(/^\s*Th \d+\s+([\d,]+)\s*$/gm)].map((m) => Number(m[1]!.replace(/,/g, '')));
  if (threads.length === 0) throw new Error(`callgrind_control gave no Ir count:\n${out}`);
  return threads.reduce((a, b) => a + b, 0);
}

/** Instructions per call of `call`, run n times one at a time. */
async function perCall(call: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 50; i++) await call(); // warm
  const before = instructions();
  for (let i = 0; i < n; i++) await call();
  return Math.round((instructions() - before) / n);
}

try {
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('redis-server under callgrind did not start in 60 s')), 60_000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
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
  redis.disconnect();
  server.kill('SIGTERM');
  await new Promise((r) => server.once('exit', r));
  rmSync(work, { recursive: true, force: true });
}
