// Fault family "soak": test/helpers/soak/cli.ts once per scenario (a global cap, none, a burst, a refusing key
// quota), and the global cap once more on a private 3-master cluster with the throttle in 3 shards (its
// cap re-divided among them by demand), each a child process with its own Redis and three worker processes: 20 s of a seeded
// Zipf-skewed load above the lanes' rate with lane pauses and a worker SIGKILLed at 10 s, then the
// drain and the checks of every documented guarantee (lost jobs, per-lane and global starts in any
// 1 s, pauses, quota windows, refusals, order, Redis state and capacity after the drain). Asserted: the
// run exits 0 and reports no violation; its figures and notes (documented behaviour, counted) are
// printed. The soak disposes of its redis-server and workers itself, on every exit path.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Finding } from '../helpers/soak/findings.js';
import { REPO_ROOT } from '../helpers/e2e.js';
import { reportFigure } from '../helpers/figures.js';

/** A scenario, and the masters it runs on (3: a cluster, the throttle in 3 shards). */
const RUNS = [
  { scenario: 'cap', masters: 1 },
  { scenario: 'nocap', masters: 1 },
  { scenario: 'burst', masters: 1 },
  { scenario: 'quota', masters: 1 },
  { scenario: 'cap', masters: 3 },
] as const;
const DURATION_S = 20;
const KILL_AT_S = 10;
const DRAIN_TIMEOUT_S = 30;
/** Past the soak's own watchdog (duration + drain timeout + 120 s): the soak ends itself first. */
const RUN_TIMEOUT_MS = (DURATION_S + DRAIN_TIMEOUT_S + 140) * 1000;

interface SoakReport {
  figures: Record<string, unknown>;
  violations: Finding[];
  notes: Finding[];
}

interface SoakExit {
  code: number | null;
  report: SoakReport | undefined;
  /** The end of its progress output, to read when it failed. */
  stderrTail: string;
  seconds: number;
}

/** Runs test/helpers/soak/cli.ts to its end; SIGTERM (its exit hooks then stop its children) if it overruns. */
function soak(scenario: string, masters: number, dumpPath: string): Promise<SoakExit> {
  const args = ['--scenario', scenario, '--masters', String(masters), '--duration', String(DURATION_S), '--kill-at', String(KILL_AT_S), '--drain-timeout', String(DRAIN_TIMEOUT_S), '--dump', dumpPath];
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/soak/cli.ts', ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const begin = performance.now();
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => void (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => void (stderr = (stderr + chunk.toString()).slice(-4_000)));
  const overrun = setTimeout(() => child.kill('SIGTERM'), RUN_TIMEOUT_MS);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(overrun);
      let report: SoakReport | undefined;
      try {
        report = JSON.parse(stdout) as SoakReport;
      } catch {
        report = undefined;
      }
      resolve({ code, report, stderrTail: stderr, seconds: Math.round((performance.now() - begin) / 100) / 10 });
    }),
  );
}

const counts = (findings: Finding[]) => Object.fromEntries(findings.map((f) => [f.kind, f.count]));

describe('soak (test/helpers/soak/cli.ts): load, pauses and a killed worker, then every guarantee checked', () => {
  for (const { scenario, masters } of RUNS) {
    const label = masters === 1 ? scenario : `${scenario}-cluster${masters}`;
    // No retry: a violation is a finding, and a second run that happens to pass would hide it.
    it(`${label}: no violation`, { timeout: RUN_TIMEOUT_MS + 10_000, retry: 0 }, async () => {
      // The run's records (submits, starts, pauses, events), kept where a failure says, to look into it.
      const dumpPath = join(tmpdir(), `sluice-soak-${label}-${process.pid}.json`);
      const run = await soak(scenario, masters, dumpPath);
      const f = run.report?.figures ?? {};
      reportFigure(`soak-${label}`, {
        exitCode: run.code,
        seconds: run.seconds,
        submits: f.submits,
        jobs: f.jobs,
        perLane: f.perLane,
        global: f.global,
        drain: f.drain,
        violations: counts(run.report?.violations ?? []),
        notes: counts(run.report?.notes ?? []),
      });
      expect(run.report, run.stderrTail).toBeDefined();
      expect(run.report!.violations, `records: ${dumpPath}\n${JSON.stringify(run.report!.violations, null, 1).slice(0, 4_000)}`).toEqual([]);
      expect(run.code).toBe(0);
      rmSync(dumpPath, { force: true });
    });
  }
});
