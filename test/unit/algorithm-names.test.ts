// Names and defaults the docs use hold on every surface: `gcra` is accepted for the leaky bucket in
// code, in the rules file and by `sluice simulate`, and a leaky bucket without `burst` gets the same
// default on all three.
import { describe, expect, it } from 'vitest';
import { policyFromFlags } from '../../src/cli/simulate.js';
import { DEFAULT_BURST } from '../../src/limiters/gcra.js';
import { parsePolicy } from '../../src/limiters/policy.js';
import { parseRules } from '../../src/rules/rules.js';
import { cli } from './cli/run-helper.js';

/** The policy of the only rule of a one-descriptor rules file. */
function rulePolicy(node: string) {
  const rules = parseRules(`domains:\n  - domain: api\n    descriptors:\n      - key: k\n        ${node}\n`);
  expect(rules.rules).toHaveLength(1);
  return rules.rules[0]!.policy;
}

describe('gcra is another name of leaky-bucket', () => {
  it('in code: parses to the leaky-bucket policy, same key namespace', () => {
    const viaAlias = parsePolicy({ algorithm: 'gcra', ratePerSecond: 2, burst: 3 });
    const viaName = parsePolicy({ algorithm: 'leaky-bucket', ratePerSecond: 2, burst: 3 });
    expect(viaAlias).toEqual(viaName);
    expect(viaAlias.algorithm).toBe('leaky-bucket');
  });

  it('in the rules file: `algorithm: gcra` beside a rate_limit, and in a policy block', () => {
    const rate = rulePolicy('rate_limit: { unit: second, requests_per_unit: 10, burst: 4 }\n        algorithm: gcra');
    expect(rate).toMatchObject({ algorithm: 'leaky-bucket', ratePerSecond: 10, burst: 4 });
    const block = rulePolicy('policy: { algorithm: gcra, rate_per_second: 5, burst: 1 }');
    expect(block).toMatchObject({ algorithm: 'leaky-bucket', ratePerSecond: 5, burst: 1 });
  });

  it('by simulate: -a gcra and --compare gcra run the leaky bucket', async () => {
    expect(policyFromFlags('gcra', { policy: [], cost: '1', ratePerSecond: '2' })).toEqual(policyFromFlags('leaky-bucket', { policy: [], cost: '1', ratePerSecond: '2' }));
    const r = await cli('simulate', '-a', 'gcra', '--rate-per-second', '1', '--burst', '1', '--times', '0,0,0');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('allowed: 2 of 3');
    const compared = await cli('simulate', '--compare', 'leaky-bucket,gcra', '--rate-per-second', '1', '--times', '0,0.5,1');
    expect(compared.code).toBe(0);
    expect(compared.stdout).toContain('allowed: A 2 of 3, B 2 of 3');
  });

  it('an unknown algorithm is still refused, naming the accepted ones', async () => {
    const r = await cli('simulate', '-a', 'gcrax', '--times', '0');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/gcra/);
    expect(() => parsePolicy({ algorithm: 'gcrax', ratePerSecond: 1 })).toThrow(/algorithm/);
  });
});

describe('one default burst', () => {
  it('the library, the rules file and simulate agree when burst is left out', () => {
    const library = parsePolicy({ algorithm: 'leaky-bucket', ratePerSecond: 10 });
    expect(library.algorithm === 'leaky-bucket' && library.burst).toBe(DEFAULT_BURST);
    const rules = rulePolicy('rate_limit: { unit: second, requests_per_unit: 10 }\n        algorithm: leaky-bucket');
    const block = rulePolicy('policy: { algorithm: leaky-bucket, rate_per_second: 10 }');
    const simulate = policyFromFlags('leaky-bucket', { policy: [], cost: '1', ratePerSecond: '10' });
    for (const p of [rules, block, simulate]) expect(p).toMatchObject({ algorithm: 'leaky-bucket', ratePerSecond: 10, burst: DEFAULT_BURST });
    expect(DEFAULT_BURST).toBe(0);
  });
});
