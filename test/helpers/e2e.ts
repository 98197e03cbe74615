// End-to-end test helpers: `sluice serve` / `worker` / `dev` as real child processes (their JSON log
// lines parsed as they arrive), temp folders for rules files and handler modules, and small HTTP and
// polling utilities. Every process started here is SIGKILLed if the test process exits first.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: child processes run `src/cli/main.ts` from here. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** One parsed pino line. */
export type LogLine = Record<string, unknown> & { level?: number; msg?: string; event?: string };

export type SluiceCommand = 'serve' | 'worker' | 'dev';

export interface StartOptions {
  config: string;
  redisUrl: string;
  /** Extra command-line arguments (e.g. ['--body-limit', '200']). */
  args?: string[];
  /** Extra environment variables (LOG_LEVEL defaults to info). */
  env?: Record<string, string>;
  /** How long to wait for the ready line (default 20 s: two cores shared with other test files). */
  readyTimeoutMs?: number;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SluiceProcess {
  readonly command: SluiceCommand;
  readonly child: ChildProcess;
  /** Every JSON log line so far, in order. */
  readonly logs: LogLine[];
  /** stderr so far (anything that is not a log line: stack traces of a failed start). */
  stderr(): string;
  /** The base URL, for serve and dev (from the `listening` line). */
  readonly url: string;
  /** Resolves with the first log line (past or future) that satisfies `match`. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number, what?: string): Promise<LogLine>;
  readonly exited: Promise<ExitInfo>;
  /** Sends `signal` (default SIGTERM) and waits for the exit; SIGKILLs and throws after `timeoutMs`. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<ExitInfo>;
}

/**
 * Starts `node --import tsx src/cli/main.ts <command> --config ... --redis-url ...` (serve and dev
 * with `--port 0`) and resolves once it logged `listening` (serve), `workers_ready` (worker) or both
 * (dev). Rejects with the process's stderr when it exits first.
 */
export async function startSluice(command: SluiceCommand, options: StartOptions): Promise<SluiceProcess> {
  const args = ['--import', 'tsx', 'src/cli/main.ts', command, '--config', options.config, '--redis-url', options.redisUrl];
  if (command !== 'worker') args.push('--port', '0');
  args.push(...(options.args ?? []));
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);

  const logs: LogLine[] = [];
  const waiters = new Set<{ match: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  let errText = '';
  let buffer = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        errText += `${text}\n`;
        continue;
      }
      logs.push(line);
      for (const w of [...waiters]) {
        if (w.match(line)) {
          waiters.delete(w);
          w.resolve(line);
        }
      }
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    errText += chunk.toString('utf8');
  });
  const exited = new Promise<ExitInfo>((resolve) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      resolve({ code, signal });
    }),
  );

  const waitForLog = (match: (l: LogLine) => boolean, timeoutMs = 15_000, what = 'a log line'): Promise<LogLine> => {
    const seen = logs.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const waiter = {
        match,
        resolve: (l: LogLine) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`sluice ${command}: no ${what} within ${timeoutMs} ms\nlogs:\n${logs.map((l) => JSON.stringify(l)).join('\n')}\nstderr:\n${errText}`));
      }, timeoutMs);
      waiters.add(waiter);
      void exited.then((info) => {
        if (!waiters.has(waiter)) return;
        waiters.delete(waiter);
        clearTimeout(timer);
        reject(new Error(`sluice ${command} exited (${info.code ?? info.signal}) before ${what}\nstderr:\n${errText}`));
      });
    });
  };

  const readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
  let url = '';
  try {
    if (command !== 'worker') {
      const listening = await waitForLog((l) => l.event === 'listening', readyTimeoutMs, "the 'listening' line");
      url = String(listening.url);
    }
    if (command !== 'serve') await waitForLog((l) => l.event === 'workers_ready', readyTimeoutMs, "the 'workers_ready' line");
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }

  return {
    command,
    child,
    logs,
    stderr: () => errText,
    url,
    waitForLog,
    exited,
    async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), timeoutMs)));
      const outcome = await Promise.race([exited, late]);
      clearTimeout(timer);
      if (outcome === 'late') {
        child.kill('SIGKILL');
        await exited;
        throw new Error(`sluice ${command} did not exit within ${timeoutMs} ms of ${signal}\nlast logs:\n${logs.slice(-5).map((l) => JSON.stringify(l)).join('\n')}\nstderr:\n${errText}`);
      }
      return outcome;
    },
  };
}

/** Stops every process given (SIGTERM), in parallel; ignores ones already gone. */
export async function stopAll(...procs: (SluiceProcess | undefined)[]): Promise<void> {
  await Promise.all(procs.map((p) => p?.stop().catch(() => undefined)));
}

/** A private temp folder for one test file's rules and handler modules. */
export interface TempDir {
  readonly path: string;
  /** Writes `text` to `name` in the folder and returns the full path. */
  write(name: string, text: string): string;
  /**
   * Replaces `name` atomically (write a sibling, rename over): a watcher never sees half a file.
   * Returns the full path.
   */
  replace(name: string, text: string): string;
  dispose(): void;
}

export function tempDir(tag = 'e2e'): TempDir {
  const path = mkdtempSync(join(tmpdir(), `sluice-${tag}-`));
  let n = 0;
  return {
    path,
    write(name, text) {
      const file = join(path, name);
      writeFileSync(file, text);
      return file;
    },
    replace(name, text) {
      const file = join(path, name);
      const tmp = join(path, `.${name}.${n++}.tmp`);
      writeFileSync(tmp, text);
      renameSync(tmp, file);
      return file;
    },
    dispose() {
      rmSync(path, { recursive: true, force: true });
    },
  };
}

/** A JSON POST; returns the response (its body unread). */
export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

/** Calls `read` until `done(value)` holds, every `intervalMs`; throws with the last value after `timeoutMs`. */
export async function pollUntil<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000, intervalMs = 100, what = 'a condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      last = await read();
      if (done(last)) return last;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value: ${JSON.stringify(last)}${lastError ? `; last error: ${String(lastError)}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The job status as GET /v1/queues/:queue/jobs/:id answers it. */
export interface JobView {
  id: string;
  queue: string;
  state: 'queued' | 'active' | 'completed' | 'failed';
  attemptsMade: number;
  startsAt?: string;
  submittedAt?: string;
  startedAt?: string;
  finishedAt?: string;
  result?: unknown;
  failedReason?: string;
}

/** Polls a job's status until it is completed or failed. */
export async function waitForJob(baseUrl: string, location: string, timeoutMs = 10_000): Promise<JobView> {
  return pollUntil(
    async () => {
      const res = await fetch(new URL(location, baseUrl));
      if (res.status !== 200) throw new Error(`GET ${location}: ${res.status}`);
      return (await res.json()) as JobView;
    },
    // Finished means a finish time too: Throttle.job() reads the job hash and its state in two calls,
    // so a job finishing in between is reported 'completed' with the hash read while it was active
    // (no result, no finishedAt). Reported to the throttle's owner; see "job status consistency" in test/e2e/submit.test.ts.
    (job) => (job.state === 'completed' || job.state === 'failed') && job.finishedAt !== undefined,
    timeoutMs,
    100,
    `job ${location} to finish`,
  );
}

/** One sample of a Prometheus text exposition. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Parses Prometheus text (the subset prom-client writes: no timestamps, escaped label values). */
export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`unparseable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** GET /metrics, parsed. */
export async function scrape(baseUrl: string): Promise<MetricSample[]> {
  const res = await fetch(new URL('/metrics', baseUrl));
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  return parseMetrics(await res.text());
}

/** The value of one sample (0 when absent: a counter never incremented has no sample). */
export function sampleValue(samples: readonly MetricSample[], name: string, labels: Record<string, string> = {}): number {
  const s = samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}
