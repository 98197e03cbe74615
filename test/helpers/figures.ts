// Fault-family figures: each fault test prints what it measured as one JSON line (seen in the test
// output), and under `npm run test:faults` (SLUICE_FAULTS_RESULTS=1) also writes it to bench/results/.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './e2e.js';

/** Prints `figure` as `FIGURE <name> {json}`, and writes bench/results/faults-<name>-<date>.json under test:faults. */
export function reportFigure(name: string, figure: Record<string, unknown>): void {
  const record = { family: name, at: new Date().toISOString(), full: process.env.SLUICE_FAULTS_FULL === '1', ...figure };
  process.stdout.write(`FIGURE ${name} ${JSON.stringify(record)}\n`);
  if (process.env.SLUICE_FAULTS_RESULTS !== '1') return;
  const dir = join(REPO_ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `faults-${name}-${record.at.slice(0, 10)}.json`), JSON.stringify(record, null, 2) + '\n');
}

/** The q-quantile (0..1) of `values` (nearest rank); 0 for none. */
export function quantile(values: readonly number[], q: number): number {
  if (!values.length) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** True when the full (long) fault runs were asked for: `npm run test:faults`. */
export const FULL_FAULTS = process.env.SLUICE_FAULTS_FULL === '1';
