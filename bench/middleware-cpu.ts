// Node CPU per request of the decision middleware alone, without HTTP: the middleware of bench/http.ts's
// `policy` (one fixed window) and `rules3` (three rules) called with a plain request and response
// object (setHeader counted, nothing sent), 50 requests in flight in a closed loop, against a private
// redis-server. What HTTP adds (express, Node's server, autocannon) is ~150 µs per request on a slow
// day of this machine, so a few µs of middleware are lost in an HTTP run's noise; here they are not.
// With --base DIR each mode also runs on another checkout (its src/ and lua/), alternated rep by rep.
// --clients N: each request from one of N client addresses drawn at random (1: every request from one
// client, the HTTP bench's case); more clients than the per-key caches hold (10,000) is every API with
// many callers.
//   npx tsx bench/middleware-cpu.ts [--modes policy,rules3] [--reps 3] [--duration 2] [--clients 1] [--base DIR]
// Prints one JSON document on stdout: per mode and tree, the lowest and the median CPU µs per request.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { startRedis } from '../test/helpers/redis-server.js';
import { RULES3_YAML } from './lib/hello-rules.js';

type Index = typeof import('../src/index.js');
type Middleware = typeof import('../src/http/middleware.js');

const { values: flags } = parseArgs({
  options: {
    modes: { type: 'string', default: 'policy,rules3' },
    reps: { type: 'string', default: '3' },
    duration: { type: 'string', default: '2' },
    clients: { type: 'string', default: '1' },
    base: { type: 'string' },
  },
});
const modes = flags.modes.split(',');
const reps = Number(flags.reps);
const durationMs = Number(flags.duration) * 1000;
const clientCount = Number(flags.clients);
if (!(Number.isInteger(clientCount) && clientCount >= 1 && clientCount <= 16_777_216)) throw new Error('--clients: 1 .. 16777216');
/** The client addresses: 10.x.y.z. */
const clients = Array.from({ length: clientCount }, (_, i) => (clientCount === 1 ? '127.0.0.1' : `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`));
if (!modes.every((m) => m === 'policy' || m === 'rules3')) throw new Error('--modes: policy, rules3');
if (!(reps >= 1 && reps <= 9 && durationMs > 0 && durationMs <= 10_000)) throw new Error('--reps 1..9, --duration (0, 10]');


const server = await startRedis();
const trees: [string, string][] = [['this', join(import.meta.dirname, '..')]];
if (flags.base) trees.push(['base', flags.base]);

async function middlewareOf(dir: string, mode: string): Promise<{ mw: RequestHandler; close: () => Promise<void> }> {
  const url = (p: string) => pathToFileURL(join(dir, p)).href;
  const index = (await import(url('src/index.ts'))) as Index;
  const { decisionMiddleware } = (await import(url('src/http/middleware.ts'))) as Middleware;
  const sluice = index.createSluice({ redis: server.url, prefix: `mwc-${mode}` });
  const mw =
    mode === 'policy'
      ? decisionMiddleware(sluice, { policy: { algorithm: 'fixed-window', limit: 1_000_000_000, windowMs: 60_000, name: 'bench-policy' }, metrics: new index.Metrics() })
      : decisionMiddleware(sluice, { rules: index.parseRules(RULES3_YAML, { filename: 'bench3.yaml' }), metrics: new index.Metrics() });
  return { mw, close: () => sluice.close() };
}

/** CPU µs per request over `ms` of a closed loop of 50. */
async function measure(mw: RequestHandler, ms: number): Promise<number> {
  let headers = 0;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const ip = clientCount === 1 ? clients[0]! : clients[(Math.random() * clientCount) | 0]!;
      const req = { method: 'GET', originalUrl: '/hello', url: '/hello', path: '/hello', headers: { host: 'bench' }, socket: { remoteAddress: ip }, ip };
      const res = { setHeader: () => void headers++, once: () => undefined };
      mw(req as unknown as Request, res as unknown as Response, ((e?: unknown) => (e ? reject(e) : resolve())) as NextFunction);
    });
  let done = 0;
  const until = Date.now() + ms;
  const c0 = process.cpuUsage();
  await Promise.all(Array.from({ length: 50 }, async () => {
    while (Date.now() < until) {
      await one();
      done++;
    }
  }));
  const c = process.cpuUsage(c0);
  if (headers < done) throw new Error('the middleware set no headers');
  return (c.user + c.system) / done;
}

const samples = new Map<string, number[]>();
try {
  const built = new Map<string, { mw: RequestHandler; close: () => Promise<void> }>();
  for (const mode of modes) for (const [name, dir] of trees) built.set(`${mode}/${name}`, await middlewareOf(dir, mode));
  for (const m of built.values()) await measure(m.mw, 1_000); // warm-up: JIT, connections, scripts
  for (let r = 0; r < reps; r++) {
    for (const [id, m] of built) {
      const xs = samples.get(id) ?? [];
      xs.push(await measure(m.mw, durationMs));
      samples.set(id, xs);
    }
  }
  for (const m of built.values()) await m.close();
} finally {
  await server.dispose();
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows = [...samples].map(([id, xs]) => {
  const [mode, tree] = id.split('/');
  return { mode, tree, cpuUsPerReqMin: +Math.min(...xs).toFixed(2), cpuUsPerReqMedian: +median(xs).toFixed(2), perRep: xs.map((x) => +x.toFixed(2)) };
});
console.log(JSON.stringify({ bench: 'middleware-cpu', at: new Date().toISOString(), command: `npx tsx bench/middleware-cpu.ts ${process.argv.slice(2).join(' ')}`.trim(), inFlight: 50, clients: clientCount, rows }, null, 1));
