// sluice_decisions_total counts rule decisions in the Metrics object and adds them to the counter when
// it is read: every read (a scrape, the JSON form) sees every decision recorded before it, exactly.
import { describe, expect, it } from 'vitest';
import { Metrics } from '../../../src/metrics/metrics.js';

async function decisions(m: Metrics): Promise<Record<string, number>> {
  const json = await m.registry.getMetricsAsJSON();
  const metric = json.find((x) => x.name === 'sluice_decisions_total')!;
  return Object.fromEntries(metric.values.map((v) => [`${String(v.labels.rule)}/${String(v.labels.outcome)}`, v.value]));
}

describe('sluice_decisions_total', () => {
  it('holds every recorded decision at each read, cumulatively', async () => {
    const m = new Metrics();
    for (let i = 0; i < 5; i++) m.recordRule('a', 'allowed');
    m.recordRule('a', 'refused');
    m.recordRule('b', 'allowed');
    expect(await decisions(m)).toEqual({ 'a/allowed': 5, 'a/refused': 1, 'b/allowed': 1 });
    expect(await decisions(m)).toEqual({ 'a/allowed': 5, 'a/refused': 1, 'b/allowed': 1 });
    m.recordRule('a', 'allowed');
    m.recordRule('b', 'shadow-refused');
    expect(await decisions(m)).toEqual({ 'a/allowed': 6, 'a/refused': 1, 'b/allowed': 1, 'b/shadow-refused': 1 });
    const text = await m.registry.metrics();
    expect(text).toContain('sluice_decisions_total{rule="a",outcome="allowed"} 6');
  });
});
