// What a sorted set's insert costs when its members share one score (docs/decisions/admit-and-park.md, stop
// 22): Redis orders members of one score by their strings, so an insert among them compares member strings
// level by level down the skiplist, each comparison a load of another member. The throttle's waiting set
// had nearly every new lane at one score (a past instant: 0 for a lane never seen); an admission now puts a
// new lane in at `now`. Here, on a private redis-server, a set is filled with `--members` lane-like members,
// then `--inserts` more are added, inside one EVAL per 1,000 (the ZADDs themselves timed by INFO
// commandstats, as a script's own commands are), in three shapes:
//   same        every member at score 0 (the waiting set's new lanes before)
//   ascending   each member at a score above every other (a new lane at now, µs, after it)
//   random      random distinct scores (an insert anywhere in the set)
// Reps alternate the shapes; µs move with the machine's load, so compare shapes within one run.
//   npx tsx bench/sorted-set-ties.ts [--members 100000] [--inserts 20000] [--reps 3]
// Prints one JSON document on stdout.
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({
  options: {
    members: { type: 'string', default: '100000' },
    inserts: { type: 'string', default: '20000' },
    reps: { type: 'string', default: '3' },
  },
});
const members = Number(flags.members);
const inserts = Number(flags.inserts);
const reps = Number(flags.reps);
if (!(members >= 1_000 && members <= 2_000_000)) throw new Error('--members: 1000 .. 2000000');
if (!(inserts >= 1_000 && inserts <= 200_000)) throw new Error('--inserts: 1000 .. 200000');
if (!(reps >= 1 && reps <= 10)) throw new Error('--reps: 1 .. 10');

// Members `lane:<8 hex digits>`, spread by a multiplicative hash so that neighbours in the loop are not
// neighbours in the set; scores by shape.
const FILL = `
local key, shape, from, n = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
for i = from, from + n - 1 do
  local member = 'lane:' .. string.format('%08x', (i * 2654435761) % 4294967296)
  local score = '0'
  if shape == 'ascending' then score = tostring(i)
  elseif shape == 'random' then score = tostring((i * 40503) % 1000003 + i / 10000000) end
  redis.call('ZADD', key, score, member)
end
return n`;

const SHAPES = ['same', 'ascending', 'random'] as const;
const server = await startRedis();
const redis = new Redis(server.url);
try {
  const perShape: Record<string, number[]> = Object.fromEntries(SHAPES.map((s) => [s, []]));
  for (let rep = 0; rep < reps; rep++) {
    for (const shape of SHAPES) {
      await redis.del('z');
      for (let from = 0; from < members; from += 10_000) await redis.eval(FILL, 1, 'z', shape, from, Math.min(10_000, members - from));
      await redis.config('RESETSTAT');
      for (let from = members; from < members + inserts; from += 1_000) await redis.eval(FILL, 1, 'z', shape, from, Math.min(1_000, members + inserts - from));
      const stats = await redis.info('commandstats');
      const m = /cmdstat_zadd:calls=(\d+),usec=(\d+)/.exec(stats);
      perShape[shape]!.push(Math.round((Number(m![2]) / Number(m![1])) * 1000) / 1000);
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const rows = SHAPES.map((shape) => ({ shape, zaddUsMedian: median(perShape[shape]!), zaddUsPerRep: perShape[shape]! }));
  process.stdout.write(`${JSON.stringify({ bench: 'sorted-set-ties', at: new Date().toISOString(), members, inserts, reps, rows }, null, 2)}\n`);
} finally {
  redis.disconnect();
  await server.dispose();
}
