// The rules of one request decided all-or-nothing through decideRules: with `slot_key` the rules of
// one client share a cluster slot (one script call), shadow rules are charged on their own and never
// refuse, a reset clears the key the decisions used, and each rule keeps its fail mode when Redis stalls.
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RuleLimiters, decideRules, ruleKeyOptions } from '../../../src/http/rule-decisions.js';
import { parseRules, type DescriptorEntry } from '../../../src/index.js';
import { TOPOLOGIES, useBackend } from '../../helpers/fixtures.js';

const rulesText = (slotKey: string | undefined) => `${slotKey ? `slot_key: ${slotKey}\n` : ''}domains:
  - domain: api
    descriptors:
      - key: user
        policy: { algorithm: sliding-log, limit: 3, window: 1h }
      - key: route
        value: search
        descriptors:
          - key: user
            name: search-per-user
            policy: { algorithm: fixed-window, limit: 2, window: 1h }
      - key: global
        name: global-trial
        policy: { algorithm: sliding-log, limit: 1, window: 1h }
        shadow_mode: true
`;

const request = (user: string): DescriptorEntry[][] => [[{ key: 'user', value: user }], [{ key: 'route', value: 'search' }, { key: 'user', value: user }], [{ key: 'global', value: 'all' }]];

describe.each(TOPOLOGIES)('rules all-or-nothing (%s)', (topology) => {
  const ctx = useBackend(topology);

  for (const slotKey of ['user', undefined]) {
    it(`slot_key ${slotKey ?? 'absent'}: a refusal charges no other enforcing rule; shadow rules count alone`, async () => {
      // Connected first: a decision made before the client is ready waits for it within its deadline, and
      // on a loaded machine a cluster's first connection can take longer (the shadow rule then answered
      // fail-open, uncharged, and the second call's shadow decision was 'allowed').
      await ctx.sluice.ready();
      const rules = parseRules(rulesText(slotKey), { filename: 'aon.yaml' });
      const limiters = new RuleLimiters((p) => ctx.sluice.limiter(p, { denyCache: true }));
      const user = `u-${slotKey ?? 'none'}`;
      const matches = request(user).map((entries) => ({ rule: rules.matchDescriptor('api', entries)!, entries }));
      const decide = () => decideRules(matches, limiters, rules.version, 1, rules.slotKey);

      const first = await decide();
      expect(first.allowed).toBe(true);
      const keyOf = (i: number) => first.results[i]!.limiter!.keyOf(first.results[i]!.identity, ruleKeyOptions(matches[i]!.entries, rules.slotKey));
      // With slot_key the client's two rules share a hash tag (so a slot); without, each key has its own tag.
      const tag = (k: string) => k.split('{')[1]!.split('}')[0];
      if (slotKey) expect([tag(keyOf(1)), calculateSlot(keyOf(1))]).toEqual([tag(keyOf(0)), calculateSlot(keyOf(0))]);
      else expect(tag(keyOf(1))).not.toBe(tag(keyOf(0)));

      const second = await decide();
      expect(second.allowed).toBe(true);
      // The shadow rule (limit 1) refuses from the second call on, and never refuses the request.
      expect(second.results[2]!.outcome).toBe('shadow-refused');

      const third = await decide();
      expect(third.allowed).toBe(false);
      expect(third.results.map((r) => r.outcome)).toEqual(['allowed', 'refused', 'shadow-refused']);
      // The user rule (limit 3) allowed the third call but was not charged: one left, as after two calls.
      expect(third.results[0]!.decision!.remaining).toBe(1);
      expect((await first.results[0]!.limiter!.peek(first.results[0]!.identity, ruleKeyOptions(matches[0]!.entries, rules.slotKey))).remaining).toBe(1);
      // The deny cache refuses the fourth without a charge either.
      const fourth = await decide();
      expect(fourth.allowed).toBe(false);
      expect((await first.results[0]!.limiter!.peek(first.results[0]!.identity, ruleKeyOptions(matches[0]!.entries, rules.slotKey))).remaining).toBe(1);

      // A reset with the rules' key options clears the very key the decisions used.
      const limiter = first.results[1]!.limiter!;
      await limiter.reset(first.results[1]!.identity, ruleKeyOptions(matches[1]!.entries, rules.slotKey));
      expect(await ctx.backend.raw.exists(keyOf(1))).toBe(0);
      const afterReset = await decideRules(matches.slice(0, 2), new RuleLimiters((p) => ctx.sluice.limiter(p)), rules.version, 1, rules.slotKey);
      expect(afterReset.allowed).toBe(true);
    });
  }
});

describe('rules all-or-nothing while Redis stalls', () => {
  const ctx = useBackend('single');

  it('each rule answers with its own fail mode; nothing is refused without one', async () => {
    const text = rulesText('user')
      .replace('limit: 3, window: 1h }', 'limit: 3, window: 1h }\n        fail_mode: open\n        timeout: 100ms')
      .replace('limit: 2, window: 1h }', 'limit: 2, window: 1h }\n            fail_mode: closed\n            timeout: 100ms');
    const rules = parseRules(text, { filename: 'aon.yaml' });
    const limiters = new RuleLimiters((p) => ctx.sluice.limiter(p));
    const matches = request('stall').slice(0, 2).map((entries) => ({ rule: rules.matchDescriptor('api', entries)!, entries }));
    expect((await decideRules(matches, limiters, rules.version, 1, rules.slotKey)).allowed).toBe(true);
    const admin = new Redis(ctx.backend.server!.port, '127.0.0.1');
    try {
      await admin.call('CLIENT', 'PAUSE', '500', 'ALL');
      const r = await decideRules(matches, limiters, rules.version, 1, rules.slotKey);
      expect(r.allowed).toBe(false);
      expect(r.results.map((x) => x.outcome)).toEqual(['fail-open', 'fail-closed']);
    } finally {
      admin.disconnect();
    }
  });
});
