// A child process that makes decisions in a loop until told to stop, then reports what it was answered,
// per policy: allowed, refused, answered by the fail mode, and any error thrown (which a decision must
// never do). Used by the fault tests that change the topology under a steady decision load.
// argv: <redis target JSON> <prefix> <cases JSON: {policy, key}[]> <concurrent calls per round>
import { exitWhenFlushed } from './child-exit.js';
import { createInterface } from 'node:readline';
import { createSluice, type PolicyInput } from '../../src/index.js';

const [target, prefix, casesJson, batchArg] = process.argv.slice(2);
const sluice = createSluice({ redis: JSON.parse(target!), prefix: prefix! });
const cases = (JSON.parse(casesJson!) as { policy: PolicyInput; key: string }[]).map((c) => ({ ...c, limiter: sluice.limiter(c.policy) }));
const batch = Number(batchArg);
const totals = cases.map(() => ({ allowed: 0, refused: 0, failOpen: 0, failClosed: 0, thrown: [] as string[] }));

// Warm the connections (every master's) and the script cache so the loop starts at full speed.
await sluice.ready();
for (const c of cases) await c.limiter.peek(`${c.key}-warmup`);
process.stdout.write(JSON.stringify({ type: 'ready' }) + '\n');

let running = false;
let loop: Promise<void> = Promise.resolve();
const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (line === 'go' && !running) {
    running = true;
    loop = (async () => {
      while (running) {
        await Promise.all(
          cases.flatMap((c, i) =>
            Array.from({ length: batch }, async () => {
              const t = totals[i]!;
              try {
                const d = await c.limiter.limit(c.key);
                if (d.failure === 'fail-open') t.failOpen++;
                else if (d.failure === 'fail-closed') t.failClosed++;
                else if (d.allowed) t.allowed++;
                else t.refused++;
              } catch (error) {
                t.thrown.push(String((error as Error).message).slice(0, 200));
              }
            }),
          ),
        );
      }
    })();
  } else if (line === 'stop') {
    running = false;
    await loop;
    process.stdout.write(JSON.stringify({ type: 'done', totals }) + '\n');
    break;
  }
}
await sluice.close();
exitWhenFlushed(0);
