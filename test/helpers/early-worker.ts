// A worker process started before its throttle's configuration exists: it reports what it logs while
// waiting ({type:'log'}) and each job it starts ({type:'start'}).
// argv: <redis url> <prefix> <throttle name>
import { createSluice } from '../../src/index.js';

const [url, prefix, name] = process.argv.slice(2);
const sluice = createSluice({ redis: url!, prefix: prefix! });
const send = (msg: object) => process.stdout.write(JSON.stringify(msg) + '\n');
const worker = sluice.worker(name!, (job) => send({ type: 'start', id: job.id, data: job.data }), {
  onWaiting: (message) => send({ type: 'log', message }),
});
send({ type: 'spawned' });
await worker.waitUntilReady();
send({ type: 'worker-ready' });
