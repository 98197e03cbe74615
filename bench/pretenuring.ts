// V8's allocation-site pretenuring and the decision middleware: a process that takes requests from its
// first moment (a server restarted under traffic) runs three rules (bench/lib/hello-rules.ts) 50 in
// flight while its Redis connection is still being made. Those first requests wait, so every object
// they allocated survives the first scavenge, and V8 may decide to allocate at those sites in the old
// generation for good ("tenure"): from then on each request's objects are promoted, and the process
// pays for it on every request. `sluice serve` / `worker` / `dev` turn that decision off
// (src/cli/main.ts); an app that embeds the middleware can too (docs/operations.md).
// Each run is a fresh child process (this file again, --role child), cold, alternated with and without
// --no-allocation-site-pretenuring, against one private redis-server; a child measures its Node CPU per
// request over `--duration` seconds after a 2 s start and reads V8's GC trace (--trace-gc-nvp) for the bytes
// each scavenge promoted.
//   npx tsx bench/pretenuring.ts [--runs 8] [--duration 4]
// Prints one JSON document on stdout: per run, the flag, CPU µs per request, median bytes promoted per
// scavenge, and whether the run ended tenured (> 200 kB a scavenge); per flag, the count of tenured
// runs and the median CPU of all runs.
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { RULES3_YAML } from './lib/hello-rules.js';
import { startRedis } from '../test/helpers/redis-server.js';

const { values: flags } = parseArgs({
  options: {
    runs: { type: 'string', default: '8' },
    duration: { type: 'string', default: '4' },
    role: { type: 'string', default: 'parent' },
    redis: { type: 'string' },
  },
});
const runs = Number(flags.runs);
const durationS = Number(flags.duration);
if (!(runs >= 1 && runs <= 40 && durationS > 0 && durationS <= 20)) throw new Error('--runs 1..40, --duration (0, 20]');
/** A run whose scavenges promote more than this is taken as tenured (untenured runs promote ~46 kB here). */
const TENURED_BYTES = 200_000;

if (flags.role === 'child') await child(flags.redis!);
else await parent();

async function child(redisUrl: string): Promise<void> {
  const index = await import('../src/index.js');
  const { decisionMiddleware } = await import('../src/http/middleware.js');
  const sluice = index.createSluice({ redis: redisUrl, prefix: `pt${process.pid}` });
  const mw: RequestHandler = decisionMiddleware(sluice, { rules: index.parseRules(RULES3_YAML, { filename: 'bench3.yaml' }) });
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = { method: 'GET', originalUrl: '/hello', url: '/hello', path: '/hello', headers: { host: 'bench' }, socket: { remoteAddress: '127.0.0.1' }, ip: '127.0.0.1' };
      const res = { setHeader: () => undefined, once: () => undefined };
      mw(req as unknown as Request, res as unknown as Response, ((e?: unknown) => (e ? reject(e) : resolve())) as NextFunction);
    });
  const loop = async (ms: number) => {
    let done = 0;
    const until = Date.now() + ms;
    const c0 = process.cpuUsage();
    // From the first moment: the connection is not made yet, and the first requests wait for it.
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (Date.now() < until) {
          await one();
          done++;
        }
      }),
    );
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / done;
  };
  await loop(2_000);
  const cpuUsPerRequest = await loop(durationS * 1000);
  process.stderr.write(`RESULT ${JSON.stringify({ cpuUsPerRequest })}\n`);
  await sluice.close();
}

async function parent(): Promise<void> {
  const server = await startRedis();
  const load = [loadavg()[0]];
  const rows: { run: number; pretenuring: boolean; cpuUsPerRequest: number; promotedPerScavenge: number; scavenges: number; tenured: boolean }[] = [];
  try {
    for (let run = 0; run < runs; run++) {
      for (const pretenuring of [true, false]) {
        const args = ['--trace-gc-nvp', ...(pretenuring ? [] : ['--no-allocation-site-pretenuring']), '--import', 'tsx', fileURLToPath(import.meta.url), '--role', 'child', '--redis', server.url, '--duration', String(durationS)];
        const { stdout, stderr, code } = await runChild(args);
        if (code !== 0) throw new Error(`child exited ${code}: ${stderr.slice(-500)}`);
        const result = /RESULT (.*)/.exec(stderr);
        if (!result) throw new Error(`no result from the child: ${stderr.slice(-500)}`);
        // The measured part's scavenges: the last half of them (the first ones are the start-up's).
        const promoted = [...stdout.matchAll(/gc=s .*?promoted=(\d+)/g)].map((m) => Number(m[1]));
        const measured = promoted.slice(Math.floor(promoted.length / 2));
        const promotedPerScavenge = median(measured);
        rows.push({ run, pretenuring, cpuUsPerRequest: round((JSON.parse(result[1]!) as { cpuUsPerRequest: number }).cpuUsPerRequest), promotedPerScavenge, scavenges: measured.length, tenured: promotedPerScavenge > TENURED_BYTES });
        process.stderr.write(`[pretenuring] run ${run} ${pretenuring ? 'default' : 'off    '}: ${rows.at(-1)!.cpuUsPerRequest} µs/request, ${promotedPerScavenge} B promoted per scavenge\n`);
      }
    }
  } finally {
    await server.dispose();
  }
  load.push(loadavg()[0]);
  const summary = [true, false].map((pretenuring) => {
    const own = rows.filter((r) => r.pretenuring === pretenuring);
    const tenured = own.filter((r) => r.tenured);
    const untenured = own.filter((r) => !r.tenured);
    return {
      flag: pretenuring ? '(default)' : '--no-allocation-site-pretenuring',
      runs: own.length,
      tenuredRuns: tenured.length,
      cpuUsPerRequestMedian: round(median(own.map((r) => r.cpuUsPerRequest))),
      cpuUsPerRequestMedianTenured: tenured.length ? round(median(tenured.map((r) => r.cpuUsPerRequest))) : null,
      cpuUsPerRequestMedianUntenured: untenured.length ? round(median(untenured.map((r) => r.cpuUsPerRequest))) : null,
    };
  });
  console.log(JSON.stringify({ bench: 'pretenuring', at: new Date().toISOString(), command: `npx tsx bench/pretenuring.ts --runs ${runs} --duration ${durationS}`, node: process.version, loadavg1m: load, summary, rows }, null, 1));
}

function runChild(args: string[]): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const watchdog = setTimeout(() => p.kill('SIGKILL'), (durationS + 60) * 1000);
    p.once('error', reject);
    p.once('close', (code) => {
      clearTimeout(watchdog);
      resolve({ stdout, stderr, code });
    });
  });
}

function median(xs: number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
