// The global cap under load, measured: a run's starts against the ideal schedule of the same submits
// (the reference model, src/throttle/dispatch.model.ts, with no delivery time and no horizon). Shared by
// bench/global-cap.ts and test/integration/throttle/global-cap-load.timing.test.ts.
import { DispatchModel } from '../../src/throttle/dispatch.model.js';
import { parseThrottleConfig, timingOf, type ThrottleConfigInput } from '../../src/throttle/config.js';
import { jain } from './throttle-procs.js';
import { maxInWindow, quantile } from './throttle-stats.js';

const r3 = (x: number | null) => (x === null ? null : Math.round(x * 1000) / 1000);

/** A job of the scenario: its key, heavy or light, and (filled in) when it was submitted and started (wall ms). */
export interface CapJob {
  key: string;
  heavy: boolean;
  submitted?: number;
  start?: number;
}

/** Deterministic shuffle (mulberry32). */
export function shuffle<T>(xs: T[], seed: number): T[] {
  let a = seed >>> 0;
  const rnd = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/** `heavy` keys with `heavyJobs` jobs each and `light` keys with `lightJobs` each, in a seeded random order. */
export function capJobs(heavy: number, heavyJobs: number, light: number, lightJobs: number, seed = 1): CapJob[] {
  const jobs: CapJob[] = [];
  for (let k = 0; k < heavy; k++) for (let i = 0; i < heavyJobs; i++) jobs.push({ key: `heavy-${k}`, heavy: true });
  for (let k = 0; k < light; k++) for (let i = 0; i < lightJobs; i++) jobs.push({ key: `light-${k}`, heavy: false });
  return shuffle(jobs, seed);
}

/** The ideal schedule of the same submits (start wall ms per job). */
export function idealStarts(jobs: CapJob[], config: ThrottleConfigInput): Map<CapJob, number> {
  const parsed = parseThrottleConfig('ideal', config);
  const t = timingOf(parsed);
  const model = new DispatchModel({ globalIntervalUs: t.globalIntervalUs, marginPpm: t.marginPpm });
  const arrivals = jobs.map((j, i) => ({ j, id: `p${i}`, at: Math.round(j.submitted! * 1000) })).sort((a, b) => a.at - b.at);
  const byId = new Map(arrivals.map((a) => [a.id, a.j]));
  const out = new Map<CapJob, number>();
  let i = 0;
  let now = arrivals[0]!.at;
  while (out.size < jobs.length) {
    while (i < arrivals.length && arrivals[i]!.at <= now) {
      const a = arrivals[i++]!;
      model.admit(now, a.j.key, a.id, 1, parsed.capacity, t.laneIntervalUs, parsed.burst);
    }
    const r = model.dispatch(now, 0, 0, 1_000_000);
    for (const d of r.jobs) out.set(byId.get(d.jobId)!, d.startUs / 1000);
    const to = Math.min(r.nextUs > now ? r.nextUs : Infinity, i < arrivals.length ? arrivals[i]!.at : Infinity);
    if (to === Infinity) break;
    now = to;
  }
  return out;
}

/** The instant after which fewer keys have work left than it takes to fill the cap. */
function contendedUntil(starts: { key: string; t: number }[], cap: number, laneRate: number): number {
  const last = new Map<string, number>();
  for (const s of starts) last.set(s.key, Math.max(last.get(s.key) ?? 0, s.t));
  const ends = [...last.values()].sort((a, b) => b - a);
  return ends[Math.min(ends.length - 1, Math.ceil(cap / laneRate) - 1)]!;
}

/** Starts in each whole second after `from`. */
function perSecond(times: number[], from: number): number[] {
  const out: number[] = [];
  for (const t of times) {
    const i = Math.floor((t - from) / 1000);
    while (out.length <= i) out.push(0);
    out[i]!++;
  }
  return out;
}

/** The figures of a run against the ideal schedule. */
export function capReport(jobs: CapJob[], config: ThrottleConfigInput & { globalRatePerSecond: number }) {
  const cap = config.globalRatePerSecond;
  const ideal = idealStarts(jobs, config);
  const started = jobs.filter((j) => j.start !== undefined);
  const starts = started.map((j) => ({ key: j.key, t: j.start! })).sort((a, b) => a.t - b.t);
  const first = starts[0]!.t;
  const until = contendedUntil(starts, cap, config.ratePerSecond);
  const inPeriod = starts.filter((s) => s.t >= first && s.t <= until);
  const idealIn = new Map<string, number>();
  for (const [j, t] of ideal) if (t >= first && t <= until) idealIn.set(j.key, (idealIn.get(j.key) ?? 0) + 1);
  const actualIn = new Map<string, number>();
  for (const s of inPeriod) actualIn.set(s.key, (actualIn.get(s.key) ?? 0) + 1);
  const ratios = [...idealIn.entries()].map(([k, want]) => (actualIn.get(k) ?? 0) / want);
  const light = jobs.filter((j) => !j.heavy);
  const wait = (j: CapJob, t: number | undefined) => (t === undefined ? Infinity : t - j.submitted!);
  const waits = (f: (j: CapJob) => number | undefined) => light.map((j) => wait(j, f(j))).sort((a, b) => a - b);
  const firsts = (f: (j: CapJob) => number | undefined) => {
    const m = new Map<string, number>();
    for (const j of light) m.set(j.key, Math.min(m.get(j.key) ?? Infinity, wait(j, f(j))));
    return [...m.values()].sort((a, b) => a - b);
  };
  const q = (xs: number[]) => ({ p50: r3(quantile(xs, 0.5)), p99: r3(quantile(xs, 0.99)) });
  const submittedFirst = Math.min(...jobs.map((j) => j.submitted!));
  const makespan = Math.max(...started.map((j) => j.start!)) - submittedFirst;
  const idealMakespan = Math.max(...ideal.values()) - submittedFirst;
  return {
    started: started.length,
    jobs: jobs.length,
    contendedSeconds: r3((until - first) / 1000),
    achievedOverCap: r3((inPeriod.length - 1) / ((until - first) / 1000) / cap),
    maxIn1s: maxInWindow(starts.map((s) => s.t), 1000),
    jainVsIdeal: r3(jain(ratios)),
    lightWaitMs: q(waits((j) => j.start)),
    lightWaitIdealMs: q(waits((j) => ideal.get(j))),
    lightFirstStartMs: q(firsts((j) => j.start)),
    lightFirstStartIdealMs: q(firsts((j) => ideal.get(j))),
    makespanOverIdeal: r3(makespan / idealMakespan),
    startsPerSecond: perSecond(starts.map((s) => s.t), submittedFirst),
    idealStartsPerSecond: perSecond([...ideal.values()], submittedFirst),
  };
}

/** Submits every job through `submit`, `inFlight` at a time, recording each submit instant. */
export async function submitAll(jobs: CapJob[], submit: (j: CapJob) => Promise<void>, inFlight = 32): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < jobs.length) {
        const j = jobs[next++]!;
        j.submitted = performance.timeOrigin + performance.now();
        await submit(j);
      }
    }),
  );
}
