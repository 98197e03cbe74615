// A child process that submits without pause from several concurrent loops until told to stop, and
// reports what each submit was told. Used by the tests that kill Redis under submit load.
// argv: <redis url> <prefix> <throttle name> <throttle config JSON> <loops>
import { exitWhenFlushed } from './child-exit.js';
import { createInterface } from 'node:readline';
import { createSluice } from '../../src/index.js';

const [url, prefix, name, configJson, loopsArg] = process.argv.slice(2);
const sluice = createSluice({ redis: url!, prefix: prefix! });
const throttle = sluice.throttle(name!, JSON.parse(configJson!));
const send = (msg: object) => process.stdout.write(JSON.stringify(msg) + '\n');

const admitted: string[] = [];
const failed: { jobId: string; code: string }[] = [];
let refused = 0;
let stop = false;
let n = 0;

async function loop(lane: number) {
  while (!stop) {
    const id = `${process.pid}-${lane}-${n++}`;
    const jobId = throttle.keys.jobId(id);
    try {
      const r = await throttle.submit(`lane${lane % 4}`, { id }, { id });
      if (r.admitted) admitted.push(r.jobId);
      else refused++;
    } catch (error) {
      failed.push({ jobId, code: (error as { code?: string }).code ?? 'unknown' });
      await new Promise((r) => setTimeout(r, 5));
    }
  }
}

await throttle.lane('lane0'); // connected, configuration published
const loops = Array.from({ length: Number(loopsArg) }, (_, i) => loop(i));
send({ type: 'running' });
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'stop') break;
}
stop = true;
await Promise.all(loops);
send({ type: 'done', admitted, failed, refused });
await sluice.close().catch(() => undefined);
exitWhenFlushed(0);
