// HTTP cost of sluice: an express 5 route bare vs behind the decision middleware (one fixed-window
// policy; rules with two and with three matching rules; one client refused nearly always, with and
// without the deny cache), the peers in the same run (express-rate-limit + rate-limit-redis never
// blocking and nearly always blocking; rate-limiter-flexible as a middleware nearly always refusing),
// and the submit endpoint's admissions per second — on a private redis-server.
//   npx tsx bench/http.ts [--duration 5] [--warmup 2] [--reps 2] [--connections 50] [--keys 100000] [--callers 1] [--variants bare,policy,...] [--base DIR]
// --callers N (N > 1): each /hello request comes from one of N client addresses drawn at random, in an
// X-Forwarded-For header that every server trusts from loopback (express's `trust proxy`, the rules'
// `trusted_proxies`): an API with many callers, where the per-key caches no longer hold every client.
// --base DIR: another checkout of sluice (a copy of an older commit, node_modules in place); each
// variant but bare also runs from it (`<variant>@base`, interleaved with the others): before/after in one run.
// The load generator (autocannon, in this process) never shares a process with a server: each server
// variant runs in its own child process (this file again, with --role server), so the two cores of a
// small machine are split between the load, the server under test and Redis the same way for every
// variant. Each load run is preceded by an unloaded probe (one connection, one request at a time, timed
// to the microsecond): what the middleware adds when the server is not saturated. Runs are interleaved
// rep by rep (the order of the /hello variants rotates each rep) so the ratios come from the same
// minutes; the load average before and after is recorded, since other work on the machine moves every
// number.
// Prints one JSON document on stdout; progress goes to stderr.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { createHistogram } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import express, { type Express } from 'express';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { RULES3_YAML, RULES_YAML } from './lib/hello-rules.js';
import { Metrics, createSluice, parseRules, type Sluice } from '../src/index.js';
import { createApp, decisionMiddleware } from '../src/express.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { redisCpuSeconds } from './lib/load.js';

/** The part of autocannon's API used here (the package ships no types; @types/autocannon is not a dependency). */
interface LoadRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  setupRequest: (req: Record<string, unknown>) => Record<string, unknown>;
}
interface LoadResult {
  duration: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
  latency: { p50: number; p90: number; p99: number; max: number; mean: number };
}
const autocannon = createRequire(import.meta.url)('autocannon') as (options: {
  url: string;
  connections: number;
  duration: number;
  requests?: LoadRequest[];
}) => Promise<LoadResult>;

const { values: flags } = parseArgs({
  options: {
    role: { type: 'string', default: 'bench' },
    variant: { type: 'string' },
    redis: { type: 'string' },
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '2' },
    reps: { type: 'string', default: '2' },
    connections: { type: 'string', default: '50' },
    keys: { type: 'string', default: '100000' },
    callers: { type: 'string', default: '1' },
    variants: { type: 'string' },
    /** Another checkout of sluice (its npm ci done): each non-bare variant also runs from it, as `<variant>@base`, interleaved with this tree's. */
    base: { type: 'string' },
  },
});

/**
 * The server variants; `submit` is POST /v1/queues/bench/jobs of createApp, the others GET /hello.
 * `policy`: one fixed-window rule (`policy:`) nothing reaches; `rules`/`rules3`: two/three matching
 * rules; `refused`: one client over a limit of 100 per 10 min (nearly every answer a 429), with the
 * deny cache (the default) and without (`refused-nocache`); `erl`/`erl-refused`: express-rate-limit
 * 8 + rate-limit-redis, as peer-bench runs it (limit 1e9 or 100 per 60 s, draft-8 headers);
 * `rlf-refused`: rate-limiter-flexible's RateLimiterRedis as a middleware (peer-bench's adapter
 * middleware), 100 per 60 s.
 */
const VARIANTS = ['bare', 'policy', 'rules', 'rules3', 'refused', 'refused-nocache', 'erl', 'erl-refused', 'rlf-refused', 'submit'] as const;
type Variant = (typeof VARIANTS)[number];
/** Variants whose answers are (nearly all) 429 by design. */
const REFUSING: ReadonlySet<Variant> = new Set(['refused', 'refused-nocache', 'erl-refused', 'rlf-refused']);

/** Everything a policy or rule would refuse is out of reach: the bench measures the cost of deciding, not of refusing. */
const HUGE_WINDOW = { algorithm: 'fixed-window', limit: 1_000_000_000, windowMs: 60_000, name: 'bench-policy' } as const;
/** One client (the bench's one IP) over this limit within seconds: the refused path. */
const SMALL_WINDOW = { algorithm: 'fixed-window', limit: 100, windowMs: 600_000, name: 'bench-refused' } as const;

// RULES_YAML (two rules) and RULES3_YAML (three) match every /hello request: bench/lib/hello-rules.ts.


if (flags.role === 'server') await serve(flags.variant as Variant, flags.redis!, Number(flags.callers));
else await bench();

// --- server child -----------------------------------------------------------------------------------

async function helloApp(variant: Exclude<Variant, 'submit'>, sluice: Sluice, redisUrl: string, callers: number): Promise<Express> {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  // Many callers arrive through a proxy on loopback: req.ip (policy mode, the peers) and the rules' ip
  // source read the forwarded address, for every variant alike.
  const viaProxy = (yaml: string) => (callers > 1 ? yaml.replace('http:\n  domain: bench\n', 'http:\n  domain: bench\n  trusted_proxies: ["127.0.0.1/32"]\n') : yaml);
  if (callers > 1) app.set('trust proxy', 'loopback');
  const hello = (_req: express.Request, res: express.Response) => {
    res.json({ hello: 'world' });
  };
  // Refusals are logged as sluice serve would (to /dev/null here): the log's cost is part of the path.
  const logger = pino({ level: 'info' }, pino.destination('/dev/null'));
  const metrics = new Metrics();
  let mw: express.RequestHandler | undefined;
  if (variant === 'policy') mw = decisionMiddleware(sluice, { policy: HUGE_WINDOW, logger, metrics });
  if (variant === 'rules') mw = decisionMiddleware(sluice, { rules: parseRules(viaProxy(RULES_YAML), { filename: 'bench.yaml' }), logger, metrics });
  if (variant === 'rules3') mw = decisionMiddleware(sluice, { rules: parseRules(viaProxy(RULES3_YAML), { filename: 'bench3.yaml' }), logger, metrics });
  if (variant === 'refused') mw = decisionMiddleware(sluice, { policy: SMALL_WINDOW, logger, metrics });
  if (variant === 'refused-nocache') mw = decisionMiddleware(sluice, { policy: SMALL_WINDOW, logger, metrics, denyCache: false });
  if (variant === 'erl' || variant === 'erl-refused') mw = await erlMiddleware(redisUrl, variant === 'erl' ? 1e9 : 100);
  if (variant === 'rlf-refused') mw = await rlfMiddleware(redisUrl, 100);
  if (mw) app.get('/hello', mw, hello);
  else app.get('/hello', hello);
  return app;
}

/** express-rate-limit + rate-limit-redis on ioredis, exactly as peer-bench's http-server.mjs sets them up. */
async function erlMiddleware(redisUrl: string, limit: number): Promise<express.RequestHandler> {
  const { rateLimit } = await import('express-rate-limit');
  const { RedisStore } = await import('rate-limit-redis');
  const client = new Redis(redisUrl);
  return rateLimit({
    windowMs: 60_000,
    limit,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store: new RedisStore({ sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as never, prefix: `bench-erl-${limit}:` }),
  });
}

/** rate-limiter-flexible's RateLimiterRedis as a middleware, as peer-bench's adapter middleware does it. */
async function rlfMiddleware(redisUrl: string, points: number): Promise<express.RequestHandler> {
  const { RateLimiterRedis } = await import('rate-limiter-flexible');
  const client = new Redis(redisUrl);
  const rl = new RateLimiterRedis({ storeClient: client, keyPrefix: 'bench-rlf', points, duration: 60 });
  return (req, res, next) => {
    rl.consume(req.ip!, 1).then(
      () => next(),
      (e: unknown) => {
        if (e instanceof Error) return next(e);
        res.status(429).set('Retry-After', String(Math.ceil((e as { msBeforeNext: number }).msBeforeNext / 1000))).send('Too Many Requests');
      },
    );
  };
}

/** Runs one variant on a free loopback port; prints `{"port":N}` on stdout; answers `cpu` over IPC; exits on SIGTERM. */
async function serve(variant: Variant, redisUrl: string, callers: number): Promise<void> {
  if (!VARIANTS.includes(variant)) throw new Error(`--variant: one of ${VARIANTS.join(', ')}`);
  const sluice = createSluice({ redis: redisUrl, prefix: 'bench' });
  const rules = parseRules(RULES_YAML, { filename: 'bench.yaml' });
  const app =
    variant === 'submit'
      ? createApp({ sluice, rules: { current: () => rules }, metrics: new Metrics(), logger: pino({ level: 'silent' }) })
      : await helloApp(variant, sluice, redisUrl, callers);
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`);
  process.on('message', (m) => {
    if (m === 'cpu') process.send!({ cpu: process.cpuUsage() });
  });
  process.once('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void sluice.close().finally(() => process.exit(0));
  });
}

// --- orchestrator and load --------------------------------------------------------------------------

interface Child {
  variant: Variant;
  /** 'base' for a server run from the --base checkout. */
  tree: 'this' | 'base';
  port: number;
  process: ChildProcess;
  /** Server CPU (user + system) in µs so far. */
  cpuUs(): Promise<number>;
}

async function startChild(variant: Variant, redisUrl: string, callers: number, baseDir?: string): Promise<Child> {
  const script = baseDir ? join(baseDir, 'bench', 'http.ts') : fileURLToPath(import.meta.url);
  // process.execArgv carries tsx's loader, so the child runs this TypeScript file the same way.
  // (--callers only when > 1: a --base tree from before it knows no such flag.)
  const child = spawn(process.execPath, [...process.execArgv, script, '--role', 'server', '--variant', variant, '--redis', redisUrl, ...(callers > 1 ? ['--callers', String(callers)] : [])], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (l) => {
      rl.close();
      resolve(l);
    });
    child.once('exit', (code) => reject(new Error(`server child '${variant}' exited with ${code} before listening`)));
  });
  const { port } = JSON.parse(line) as { port: number };
  const cpuUs = () =>
    new Promise<number>((resolve) => {
      child.once('message', (m) => {
        const { cpu } = m as { cpu: NodeJS.CpuUsage };
        resolve(cpu.user + cpu.system);
      });
      child.send('cpu');
    });
  return { variant, tree: baseDir ? 'base' : 'this', port, process: child, cpuUs };
}

interface Run {
  variant: Variant;
  /** Present ('base') for a server run from the --base checkout. */
  tree?: 'base';
  rep: number;
  requests: number;
  requestsPerSec: number;
  /** Responses by status (the hello variants must be all 200; submit: 202 admitted, 429 refused). */
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** Under load (autocannon's histogram: whole milliseconds). */
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
  /** Unloaded: one keep-alive connection, one request at a time, measured to the microsecond. */
  unloadedLatencyMs: { p50: number; p99: number; requests: number };
  /** Server process CPU per request (user + system µs). */
  serverCpuUsPerReq: number;
  /** redis-server CPU per request (µs). */
  redisCpuUsPerReq: number;
}

/**
 * Latency without load: `count` requests one after another on one keep-alive connection (or until
 * `maxMs`), timed here with a nanosecond histogram. autocannon's histogram has whole milliseconds only,
 * too coarse for what a middleware adds to an idle server.
 */
/** A random client address of `callers` (10.x.y.z), as a proxy on loopback forwards it. */
function callerAddress(callers: number): string {
  const i = (Math.random() * callers) | 0;
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

async function probe(child: Child, count: number, maxMs: number, keys: number, callers: number): Promise<{ p50: number; p99: number; requests: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const hist = createHistogram({ lowest: 1, highest: 60e9, figures: 3 });
  const submit = child.variant === 'submit';
  const deadline = performance.now() + maxMs;
  let done = 0;
  try {
    for (let i = 0; i < count && performance.now() < deadline; i++) {
      const body = submit ? JSON.stringify({ key: `p${i % keys}`, payload: { i } }) : undefined;
      const t0 = process.hrtime.bigint();
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          {
            agent,
            host: '127.0.0.1',
            port: child.port,
            method: submit ? 'POST' : 'GET',
            path: submit ? '/v1/queues/bench/jobs' : '/hello',
            headers: submit ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body!) } : callers > 1 ? { 'x-forwarded-for': callerAddress(callers) } : {},
          },
          (res) => {
            res.resume();
            res.once('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.once('error', reject);
        req.end(body);
      });
      hist.record(Math.max(1, Number(process.hrtime.bigint() - t0)));
      if (status >= 300 && !(status === 429 && REFUSING.has(child.variant))) throw new Error(`probe of '${child.variant}' answered ${status}`);
      done++;
    }
  } finally {
    agent.destroy();
  }
  const ms = (ns: number) => Math.round(ns / 1e3) / 1e3;
  return { p50: ms(hist.percentile(50)), p99: ms(hist.percentile(99)), requests: done };
}

async function load(child: Child, seconds: number, connections: number, keys: number, callers: number): Promise<LoadResult> {
  const url = `http://127.0.0.1:${child.port}`;
  if (child.variant !== 'submit' && callers > 1) {
    return autocannon({
      url,
      connections,
      duration: seconds,
      requests: [{ method: 'GET', path: '/hello', headers: {}, setupRequest: (req) => ({ ...req, headers: { ...(req.headers as object), 'x-forwarded-for': callerAddress(callers) } }) }],
    });
  }
  if (child.variant !== 'submit') return autocannon({ url: `${url}/hello`, connections, duration: seconds });
  let n = 0;
  return autocannon({
    url,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        path: '/v1/queues/bench/jobs',
        headers: { 'content-type': 'application/json' },
        // Many distinct keys, so lanes never fill: every answer should be a 202 admission.
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ key: `k${n++ % keys}`, payload: { n } }) }),
      },
    ],
  });
}

async function bench(): Promise<void> {
  const durationS = Number(flags.duration);
  const warmupS = Number(flags.warmup);
  const reps = Number(flags.reps);
  const connections = Number(flags.connections);
  const keys = Number(flags.keys);
  const callers = Number(flags.callers);
  if (!(Number.isInteger(callers) && callers >= 1 && callers <= 16_777_216)) throw new Error('--callers: 1 .. 16777216');
  if (!(durationS > 0 && durationS <= 30)) throw new Error('--duration: seconds in (0, 30]');
  if (!(warmupS >= 0 && warmupS <= 10)) throw new Error('--warmup: seconds in [0, 10]');
  if (!(reps >= 1 && reps <= 5)) throw new Error('--reps: 1 .. 5');
  if (!(connections >= 1 && connections <= 500)) throw new Error('--connections: 1 .. 500');
  if (!(keys >= 1 && keys <= 1_000_000)) throw new Error('--keys: 1 .. 1000000');
  const variants = (flags.variants ? flags.variants.split(',') : [...VARIANTS]) as Variant[];
  for (const v of variants) if (!VARIANTS.includes(v)) throw new Error(`--variants: each one of ${VARIANTS.join(', ')}`);
  if (!variants.includes('bare')) throw new Error('--variants: bare is needed (every ratio is against it)');

  const baseVariants = variants.filter((v) => ['policy', 'rules', 'rules3', 'refused', 'refused-nocache'].includes(v));
  const log = (msg: string) => process.stderr.write(`[http ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
  // A hard stop, whatever hangs: the run is bounded in time.
  const budgetMs = ((flags.base ? 2 : 1) * variants.length * (reps * (durationS + 3) + warmupS) + 60) * 1000 + 60_000;
  setTimeout(() => {
    log(`watchdog: still running after ${budgetMs} ms, exiting`);
    process.exit(124);
  }, budgetMs).unref();

  const server = await startRedis();
  const raw = new Redis(server.port, '127.0.0.1');
  const children: Child[] = [];
  try {
    for (const v of variants) children.push(await startChild(v, server.url, callers));
    // The --base checkout's servers: sluice's hello variants (bare and the peers are the same code in both; not submit).
    if (flags.base) for (const v of baseVariants) children.push(await startChild(v, server.url, callers, flags.base));
    log(`servers up (redis ${server.port}); warming up ${warmupS} s each`);
    for (const c of children) if (warmupS > 0) await load(c, warmupS, connections, keys, callers);

    const loadBefore = os.loadavg().map((x) => Math.round(x * 100) / 100);
    const runs: Run[] = [];
    const hello = children.filter((c) => c.variant !== 'submit');
    const label = (c: Child) => (c.tree === 'base' ? `${c.variant}@base` : c.variant);
    const submitChild = children.find((c) => c.variant === 'submit');
    for (let rep = 1; rep <= reps; rep++) {
      const shift = (rep - 1) % hello.length;
      for (const c of [...hello.slice(shift), ...hello.slice(0, shift), ...(submitChild ? [submitChild] : [])]) {
        const unloaded = await probe(c, 2_000, 3_000, keys, callers);
        // CPU is read around the load run only, so it is divided by the requests it served.
        const cpu0 = await c.cpuUs();
        const redis0 = await redisCpuSeconds(() => raw.info('cpu'));
        const r = await load(c, durationS, connections, keys, callers);
        const cpu1 = await c.cpuUs();
        const redis1 = await redisCpuSeconds(() => raw.info('cpu'));
        const statuses = Object.fromEntries(Object.entries(r.statusCodeStats).map(([code, s]) => [code, s.count]));
        const total = Object.values(statuses).reduce((a, b) => a + b, 0);
        const run: Run = {
          variant: c.variant,
          ...(c.tree === 'base' ? { tree: 'base' as const } : {}),
          rep,
          requests: total,
          requestsPerSec: Math.round(total / r.duration),
          statuses,
          errors: r.errors,
          timeouts: r.timeouts,
          latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: r.latency.mean },
          unloadedLatencyMs: unloaded,
          serverCpuUsPerReq: total ? Math.round(((cpu1 - cpu0) / total) * 10) / 10 : 0,
          redisCpuUsPerReq: total ? Math.round((((redis1 - redis0) * 1e6) / total) * 10) / 10 : 0,
        };
        runs.push(run);
        log(`rep ${rep} ${label(c)}: ${run.requestsPerSec} req/s, p99 ${run.latencyMs.p99} ms, unloaded p99 ${unloaded.p99} ms, ${JSON.stringify(statuses)}`);
      }
    }

    const loadAfter = os.loadavg().map((x) => Math.round(x * 100) / 100);
    const of = (v: Variant) => runs.filter((r) => r.variant === v && r.tree === undefined).sort((a, b) => a.rep - b.rep);
    const ofBase = (v: Variant) => runs.filter((r) => r.variant === v && r.tree === 'base').sort((a, b) => a.rep - b.rep);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const r3 = (x: number) => Math.round(x * 1000) / 1000;
    const bare = of('bare');
    const median = (xs: number[]) => {
      const v = [...xs].sort((a, b) => a - b);
      const m = Math.floor(v.length / 2);
      return v.length % 2 ? v[m]! : (v[m - 1]! + v[m]!) / 2;
    };
    const bareCpu = mean(bare.map((r) => r.serverCpuUsPerReq));
    /**
     * Each rep against the bare run of the same rep; the median over reps. Throughput and p99 move
     * with whatever else the machine runs; server CPU per request hardly does, so the CPU ratio says
     * what a CPU-bound server would see.
     */
    const versusBare = (v: Variant) => {
      const rows = of(v);
      const ratios = rows.map((r, i) => r.requestsPerSec / bare[i]!.requestsPerSec);
      const addedP99 = rows.map((r, i) => r.latencyMs.p99 - bare[i]!.latencyMs.p99);
      const addedUnloadedP50 = rows.map((r, i) => r.unloadedLatencyMs.p50 - bare[i]!.unloadedLatencyMs.p50);
      const addedUnloadedP99 = rows.map((r, i) => r.unloadedLatencyMs.p99 - bare[i]!.unloadedLatencyMs.p99);
      const cpu = mean(rows.map((r) => r.serverCpuUsPerReq));
      return {
        requestsPerSec: Math.round(median(rows.map((r) => r.requestsPerSec))),
        ratioToBare: r3(median(ratios)),
        ratioToBarePerRep: ratios.map(r3),
        p99Ms: r3(median(rows.map((r) => r.latencyMs.p99))),
        addedP99Ms: r3(median(addedP99)),
        addedP99MsPerRep: addedP99.map(r3),
        unloadedP50Ms: r3(median(rows.map((r) => r.unloadedLatencyMs.p50))),
        unloadedP99Ms: r3(median(rows.map((r) => r.unloadedLatencyMs.p99))),
        addedUnloadedP50Ms: r3(median(addedUnloadedP50)),
        addedUnloadedP99Ms: r3(median(addedUnloadedP99)),
        addedUnloadedP99MsPerRep: addedUnloadedP99.map(r3),
        serverCpuUsPerReq: r3(cpu),
        addedServerCpuUsPerReq: r3(cpu - bareCpu),
        cpuRatioToBare: r3(bareCpu / cpu),
        redisCpuUsPerReq: r3(mean(rows.map((r) => r.redisCpuUsPerReq))),
        refusedShare: r3(mean(rows.map((r) => (r.requests ? (r.statuses['429'] ?? 0) / r.requests : 0)))),
      };
    };
    /** `a` against `b` rep by rep (same minutes): requests/s ratio (median, per rep) and server CPU ratio (b's per request over a's). */
    const versus = (a: Variant, b: Variant) => {
      if (!variants.includes(a) || !variants.includes(b)) return undefined;
      const ra = of(a);
      const rb = of(b);
      const ratios = ra.map((r, i) => r.requestsPerSec / rb[i]!.requestsPerSec);
      return {
        ratio: r3(median(ratios)),
        ratioPerRep: ratios.map(r3),
        cpuRatio: r3(mean(rb.map((r) => r.serverCpuUsPerReq)) / mean(ra.map((r) => r.serverCpuUsPerReq))),
      };
    };
    const helloVariants = variants.filter((v) => v !== 'bare' && v !== 'submit');
    const baseHello = helloVariants.filter((v) => baseVariants.includes(v));
    /** This tree's variant against the --base checkout's, rep by rep, and the base's own ratio to bare. */
    const versusBase = (v: Variant) => {
      const rows = of(v);
      const base = ofBase(v);
      const ratios = rows.map((r, i) => r.requestsPerSec / base[i]!.requestsPerSec);
      const baseToBare = base.map((r, i) => r.requestsPerSec / bare[i]!.requestsPerSec);
      return {
        ratioToBase: r3(median(ratios)),
        ratioToBasePerRep: ratios.map(r3),
        baseRatioToBare: r3(median(baseToBare)),
        baseRatioToBarePerRep: baseToBare.map(r3),
        baseServerCpuUsPerReq: r3(mean(base.map((r) => r.serverCpuUsPerReq))),
        serverCpuUsPerReq: r3(mean(rows.map((r) => r.serverCpuUsPerReq))),
        baseRedisCpuUsPerReq: r3(mean(base.map((r) => r.redisCpuUsPerReq))),
      };
    };
    const submit = of('submit');
    // Admissions per second: the submit rate times the share answered 202 (a 429 or 503 admits nothing).
    const admitted = submit.map((r) => (r.requests ? (r.requestsPerSec * (r.statuses['202'] ?? 0)) / r.requests : 0));
    const redisVersion = /redis_version:(\S+)/.exec(await raw.info('server'))?.[1];
    const result = {
      bench: 'http',
      command: `npx tsx bench/http.ts --duration ${durationS} --warmup ${warmupS} --reps ${reps} --connections ${connections} --keys ${keys}${callers > 1 ? ` --callers ${callers}` : ''} --variants ${variants.join(',')}${flags.base ? ` --base ${flags.base}` : ''}`,
      machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, node: process.version, redis: redisVersion, platform: `${os.platform()} ${os.release()}`, loadAvg1m5m15m: { before: loadBefore, after: loadAfter } },
      setup: {
        connections,
        durationS,
        warmupS,
        reps,
        summary: 'medians over reps; ratios and added p99 per rep against the bare run of the same rep; CPU per request as means',
        processes: 'autocannon in the bench process; each server variant in its own child process; a private redis-server',
        policy: HUGE_WINDOW,
        refused: { policy: SMALL_WINDOW, clients: 'one (every request from 127.0.0.1)', denyCache: 'on (refused), off (refused-nocache)' },
        rules: 'two rules per request: token bucket per IP + sliding counter per route group and IP (all-or-nothing: one `limits` script call since issue 12; 2 peeks, then 2 charges before)',
        rules3: 'three rules per request: the two of `rules` + a fixed window per route group (one `limits` script call since issue 12; 3 peeks, then 3 charges before)',
        erl: 'express-rate-limit 8.7.5 + rate-limit-redis 6.0.1 (ioredis), windowMs 60 s, limit 1e9 (erl) or 100 (erl-refused), draft-8 headers, no legacy headers',
        rlf: 'rate-limiter-flexible 11.4.0 RateLimiterRedis (ioredis) as a middleware: 100 points per 60 s per req.ip, 429 + Retry-After',
        logging: 'sluice variants get a pino logger (to /dev/null) and a Metrics instance, as sluice serve would',
        submit: `POST /v1/queues/bench/jobs, ${keys} distinct body keys in turn, rate 10/s and capacity 100 per key, no workers`,
        callers: callers > 1 ? `each /hello request from one of ${callers} addresses drawn at random, in X-Forwarded-For, trusted from loopback by every server` : 'one (every request from 127.0.0.1)',
      },
      summary: {
        bare: {
          requestsPerSec: Math.round(median(bare.map((r) => r.requestsPerSec))),
          requestsPerSecPerRep: bare.map((r) => r.requestsPerSec),
          p99Ms: r3(median(bare.map((r) => r.latencyMs.p99))),
          unloadedP50Ms: r3(median(bare.map((r) => r.unloadedLatencyMs.p50))),
          unloadedP99Ms: r3(median(bare.map((r) => r.unloadedLatencyMs.p99))),
          serverCpuUsPerReq: r3(bareCpu),
        },
        ...Object.fromEntries(helloVariants.map((v) => [v, versusBare(v)])),
        comparisons: {
          'refused ÷ policy (refused path vs allowed path)': versus('refused', 'policy'),
          'refused-nocache ÷ policy': versus('refused-nocache', 'policy'),
          'refused ÷ refused-nocache (the deny cache)': versus('refused', 'refused-nocache'),
          'policy ÷ erl': versus('policy', 'erl'),
          'refused ÷ erl-refused': versus('refused', 'erl-refused'),
          'refused ÷ rlf-refused': versus('refused', 'rlf-refused'),
          'rules3 ÷ erl': versus('rules3', 'erl'),
        },
        base: flags.base ? { dir: flags.base, ...Object.fromEntries(baseHello.map((v) => [v, versusBase(v)])) } : undefined,
        submit: submit.length === 0 ? undefined : {
          requestsPerSec: Math.round(median(submit.map((r) => r.requestsPerSec))),
          admissionsPerSec: Math.round(median(admitted)),
          admissionsPerSecPerRep: admitted.map((a) => Math.round(a)),
          p99Ms: r3(median(submit.map((r) => r.latencyMs.p99))),
          unloadedP50Ms: r3(median(submit.map((r) => r.unloadedLatencyMs.p50))),
          unloadedP99Ms: r3(median(submit.map((r) => r.unloadedLatencyMs.p99))),
          serverCpuUsPerReq: r3(mean(submit.map((r) => r.serverCpuUsPerReq))),
          redisCpuUsPerReq: r3(mean(submit.map((r) => r.redisCpuUsPerReq))),
        },
      },
      runs,
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const c of children) {
      c.process.kill('SIGTERM');
      if (c.process.exitCode === null) await Promise.race([once(c.process, 'exit'), new Promise((r) => setTimeout(r, 3_000))]);
    }
    raw.disconnect();
    await server.dispose();
  }
}
