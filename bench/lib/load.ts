// A bounded closed-loop load generator: `concurrency` loops each keep one call in flight until the
// duration or the call budget runs out, with a latency histogram.
import { createHistogram } from 'node:perf_hooks';

export interface LoadResult {
  ops: number;
  errors: number;
  elapsedMs: number;
  opsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

export async function closedLoop(op: () => Promise<unknown>, concurrency: number, durationMs: number, maxOps = 5_000_000): Promise<LoadResult> {
  if (!(durationMs > 0 && durationMs <= 120_000)) throw new Error('durationMs must be in (0, 120000]');
  const hist = createHistogram({ lowest: 1, highest: 60e9, figures: 3 });
  let issued = 0;
  let done = 0;
  let errors = 0;
  const t0 = performance.now();
  const deadline = t0 + durationMs;
  async function loop(): Promise<void> {
    while (issued < maxOps && performance.now() < deadline) {
      issued++;
      const s = process.hrtime.bigint();
      try {
        await op();
      } catch (e) {
        if (++errors <= 3) console.error('op error:', e instanceof Error ? e.message : e);
      }
      hist.record(Math.max(1, Number(process.hrtime.bigint() - s)));
      done++;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, loop));
  const elapsedMs = performance.now() - t0;
  return {
    ops: done,
    errors,
    elapsedMs: Math.round(elapsedMs),
    opsPerSec: Math.round((done / elapsedMs) * 1000),
    p50Ms: r3(hist.percentile(50) / 1e6),
    p99Ms: r3(hist.percentile(99) / 1e6),
    maxMs: r3(hist.max / 1e6),
  };
}

/** Redis server CPU seconds (user + sys) from INFO cpu. */
export async function redisCpuSeconds(info: () => Promise<string>): Promise<number> {
  const text = await info();
  const g = (k: string) => Number(new RegExp(`${k}:([\\d.]+)`).exec(text)?.[1] ?? 0);
  return g('used_cpu_user') + g('used_cpu_sys');
}
