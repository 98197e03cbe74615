// Where one admission's Redis work goes (issue 12 item 3, one in flight): a real submit's EVALSHA of
// lua/throttle-admit.lua is captured (MONITOR on a private redis-server) and replayed `--n` times, one at a
// time, each with a job id of its own, as one of these variants of the script:
//   trivial   `return 0` with the same 12 keys and 22 arguments: the call, its arguments, the reply
//   defs      the script up to its body: + the functions and tables of its includes, made on every call
//   now       + the body's first line (now_us: Redis TIME)
//   full      the whole admission
//   function  the whole admission as a function (FCALL of its library: what sluice runs on Redis 7)
// Run under callgrind by bench/throttle-admit-instructions.sh (SCRIPT=bench/throttle-admit-breakdown.ts
// VARIANT=...), the difference of two --n gives Redis instructions per admission for each variant; without
// it, it prints commandstats' µs (wall time inside Redis: moves with the machine's load).
//   npx tsx bench/throttle-admit-breakdown.ts [--n 2000] [--variant full]
// Prints one JSON document on stdout.
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { createSluice } from '../src/index.js';
import { loadScripts } from '../src/redis/script-forms.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({
  options: {
    n: { type: 'string', default: '2000' },
    variant: { type: 'string', default: 'full' },
    // Accepted for bench/throttle-admit-instructions.sh's sake (one key, one in flight here).
    keys: { type: 'string', default: '1' },
    inflight: { type: 'string', default: '1' },
  },
});

const server = await startRedis();
const sluice = createSluice({ redis: server.url, prefix: 'ab' });
try {
  const throttle = sluice.throttle('t', { ratePerSecond: 1000, capacity: 10_000_000 });
  await throttle.ready();
  for (let i = 0; i < 5; i++) await throttle.submit('k1', { x: i });
  // The submit's call as ioredis's MONITOR reader parses it (as test/integration/limits-repeat-args.test.ts reads calls).
  const raw = new Redis(server.url);
  const monitor = await raw.monitor();
  const seen: string[][] = [];
  monitor.on('monitor', (_time: string, args: string[]) => {
    // FCALL once the admission's function library is loaded, EVALSHA before it.
    if (['fcall', 'evalsha'].includes(args[0]?.toLowerCase() ?? '')) seen.push(args);
  });
  const probe = await throttle.submit('k1', { x: 'probe' });
  await raw.ping();
  await new Promise((r) => setTimeout(r, 50));
  monitor.disconnect();
  if (!probe.admitted) throw new Error('the probe was refused');
  const call = seen[0];
  if (!call) throw new Error('no FCALL or EVALSHA seen on MONITOR');
  const [, called, keyCount, ...args] = call as [string, string, string, ...string[]];
  const script = [...loadScripts().values()].find((s) => s.sha === called || s.fn === called);
  if (script?.name !== 'throttle-admit') throw new Error(`the submit called ${script?.name ?? called}, not throttle-admit`);
  const body = 'local now = now_us(ARGV[1])\nlocal job_id = ARGV[2]\n';
  if (!script.lua.includes(body)) throw new Error("lua/throttle-admit.lua's body no longer starts as this bench expects");
  const variants: Record<string, string> = {
    trivial: 'return 0',
    defs: script.lua.replace(body, `do return {} end\n${body}`),
    now: script.lua.replace(body, `${body}do return {} end\n`),
    full: script.lua,
  };
  // `function`: the whole admission as sluice runs it on Redis 7, FCALL of its library (includes made at load).
  const lua = flags.variant === 'function' ? script.lua : variants[flags.variant];
  if (!lua) throw new Error(`--variant: one of ${[...Object.keys(variants), 'function'].join(', ')}`);
  const variantSha = (await raw.script('LOAD', lua)) as string;
  if (flags.variant === 'function') await raw.call('FUNCTION', 'LOAD', 'REPLACE', script.library);
  const n = Number(flags.n);
  await raw.config('RESETSTAT');
  for (let i = 0; i < n; i++) {
    const id = `${probe.jobId}r${i}`;
    const callArgs = args.map((a) => a.split(probe.jobId).join(id));
    if (flags.variant === 'function') await raw.call('FCALL', script.fn, keyCount, ...callArgs);
    else await raw.evalsha(variantSha, Number(keyCount), ...callArgs);
  }
  const stats = /cmdstat_(?:fcall|evalsha):calls=(\d+),usec=(\d+)/.exec(await raw.info('commandstats'))!;
  raw.disconnect();
  console.log(JSON.stringify({ bench: 'throttle-admit-breakdown', variant: flags.variant, n, keys: Number(keyCount), args: args.length - Number(keyCount), scriptUsPerCall: Math.round((Number(stats[2]) / Number(stats[1])) * 100) / 100 }));
} finally {
  await sluice.close();
  await server.dispose();
}
