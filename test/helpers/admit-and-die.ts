// A submitter that dies between admission and enqueue: admits jobs into lanes (the first half of
// submit) and then SIGKILLs itself before any add reaches the queue.
// argv: <redis url> <prefix> <throttle name> <throttle config JSON> <jobs>
import { createSluice } from '../../src/index.js';
import type { LaneScripts } from '../../src/throttle/lane-scripts.js';

const [url, prefix, name, configJson, jobs] = process.argv.slice(2);
const sluice = createSluice({ redis: url!, prefix: prefix! });
const throttle = sluice.throttle(name!, JSON.parse(configJson!));
await throttle.lane('warm'); // connected, configuration published
const lanes = (throttle as unknown as { admitLanes: LaneScripts }).admitLanes;
for (let i = 0; i < Number(jobs); i++) {
  const reply = await lanes.admit(throttle.keys.laneId(`key${i % 5}`), throttle.keys.jobId(), 1, false, '');
  if (reply.kind !== 'admitted') throw new Error(`not admitted: ${reply.kind}`);
}
process.stdout.write(JSON.stringify({ type: 'admitted' }) + '\n');
process.kill(process.pid, 'SIGKILL');
