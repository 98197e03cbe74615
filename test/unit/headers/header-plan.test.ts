// HeaderPlan (the middleware's headers, planned once per policy) against the one serialiser: for
// decisions the reference models make at generated instants and costs, several rules at once, every
// header selection, and decisions Redis did not make, writePlannedHeaders sets exactly the headers
// serialiseHeaders(decisionFacts(...)) returns, in the same order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HeaderPlan, plannedRetryAfter, resolveSelection, writePlannedHeaders, type PlannedDecision } from '../../../src/headers/header-plan.js';
import { decisionFacts, serialiseHeaders, type HeaderInput, type HeaderSelection } from '../../../src/headers/headers.js';
import type { Decision } from '../../../src/limiters/decision.js';
import { modelFor } from '../../../src/limiters/model.js';
import { parsePolicy, type Policy, type PolicyInput } from '../../../src/limiters/policy.js';

const POLICIES: [string, PolicyInput][] = [
  ['per-ip', { algorithm: 'fixed-window', limit: 5, windowMs: 60_000 }],
  ['odd "name"\\x', { algorithm: 'fixed-window', limit: 3, windowMs: 1_500 }],
  ['log', { algorithm: 'sliding-log', limit: 4, windowMs: 10_000 }],
  ['counter', { algorithm: 'sliding-counter', limit: 6, windowMs: 60_000 }],
  ['bucket', { algorithm: 'token-bucket', capacity: 5, refillPerSecond: 0.5 }],
  ['bucket-frac', { algorithm: 'token-bucket', capacity: 3, refillPerSecond: 0.7 }],
  ['gcra', { algorithm: 'leaky-bucket', ratePerSecond: 2, burst: 3 }],
  ['slots', { algorithm: 'concurrency', limit: 2, leaseMs: 30_000 }],
];
const PARSED: [string, Policy][] = POLICIES.map(([n, p]) => [n, parsePolicy(p)]);

const SELECTIONS: HeaderSelection[] = [
  {},
  { ietf: 'draft-07' },
  { ietf: false },
  { legacy: false },
  { legacyReset: 'delta-seconds' },
  { retryAfter: false, ietf: 'draft-07', legacyReset: 'delta-seconds' },
];

/** A decision of policy `i` after `calls` (gap ms, cost) from the model, or one the fail mode made. */
const decisionArb = fc.record({
  policy: fc.nat(PARSED.length - 1),
  calls: fc.array(fc.tuple(fc.nat(4_000), fc.integer({ min: 1, max: 3 })), { minLength: 1, maxLength: 12 }),
  failure: fc.constantFrom(undefined, undefined, undefined, 'fail-open' as const, 'fail-closed' as const),
});

describe('writePlannedHeaders', () => {
  it('sets what serialiseHeaders(decisionFacts(...)) returns, for 1 to 3 decisions and every selection', () => {
    fc.assert(
      fc.property(fc.array(decisionArb, { minLength: 1, maxLength: 3 }), fc.nat(SELECTIONS.length - 1), fc.integer({ min: 0, max: 5 }), (specs, s, lagMs) => {
        const start = 1_796_000_000_000;
        let end = start;
        const inputs: HeaderInput[] = [];
        const planned: PlannedDecision[] = [];
        for (const spec of specs) {
          const [name, policy] = PARSED[spec.policy]!;
          const model = modelFor(policy);
          let t = start;
          let decision: Decision | undefined;
          let cost = 1;
          for (const [gap, c] of spec.calls) {
            t += gap;
            cost = Math.min(c, policy.algorithm === 'leaky-bucket' ? policy.burst + 1 : 'limit' in policy ? policy.limit : policy.capacity);
            decision = model.decide(t, cost);
          }
          end = Math.max(end, t);
          const plan = new HeaderPlan(name, policy, decision!.limit);
          if (spec.failure) {
            const open = spec.failure === 'fail-open';
            decision = { allowed: open, limit: decision!.limit, remaining: 0, retryAfterMs: open ? 0 : 1_000, resetAtMs: t, failure: spec.failure };
          }
          inputs.push({ decision: decision!, policy, name, cost });
          planned.push({ decision: decision!, plan, cost });
        }
        // The headers are written a little after the last decision, as the middleware does.
        const nowMs = end + lagMs;
        const selection = SELECTIONS[s]!;
        const expected = serialiseHeaders(decisionFacts(inputs, nowMs), selection);
        const got: [string, string][] = [];
        writePlannedHeaders((n, v) => got.push([n, v]), planned, nowMs, resolveSelection(selection), plannedRetryAfter(planned));
        expect(got).toEqual(expected);
      }),
      { numRuns: 400, seed: 20261130 },
    );
  });

  it('a plan holds the policy part of the fields once: name quoted, quota, unit, whole-second window', () => {
    const plan = new HeaderPlan('per-ip', parsePolicy({ algorithm: 'fixed-window', limit: 5, windowMs: 60_000 }), 5);
    expect([plan.draft11Policy, plan.draft11Prefix, plan.draft07Policy, plan.quotaText]).toEqual(['"per-ip";q=5;w=60', '"per-ip";r=', '5;w=60', '5']);
    const slots = new HeaderPlan('slots', parsePolicy({ algorithm: 'concurrency', limit: 2, leaseMs: 30_000 }), 2);
    expect([slots.draft11Policy, slots.draft07Policy]).toEqual(['"slots";q=2;qu="concurrent-requests"', undefined]);
  });
});
