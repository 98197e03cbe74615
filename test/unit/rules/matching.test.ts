// Envoy descriptor matching: level by level, exact value beats wildcard beats key-only, every
// entry consumed, and the last node must limit.
import { describe, expect, it } from 'vitest';
import { descriptorIdentity, type DescriptorEntry } from '../../../src/rules/descriptor.js';
import { parseRules } from '../../../src/rules/rules.js';

const rules = parseRules(
  `domains:
  - domain: messaging
    descriptors:
      - key: message_type
        value: marketing
        rate_limit: { unit: day, requests_per_unit: 5 }
      - key: message_type
        rate_limit: { unit: minute, requests_per_unit: 50 }
  - domain: api
    descriptors:
      - key: route
        value: "/v1/*"
        descriptors:
          - key: user
            rate_limit: { unit: minute, requests_per_unit: 60 }
      - key: route
        value: "/v1/admin/*"
        descriptors:
          - key: user
            rate_limit: { unit: minute, requests_per_unit: 10 }
      - key: route
        value: /v1/health
        unlimited: true
      - key: route
        value: "*"
        descriptors:
          - key: user
            rate_limit: { unit: minute, requests_per_unit: 30 }
      - key: tenant
        descriptors:
          - key: user
            value: root
            unlimited: true
          - key: user
            rate_limit: { unit: second, requests_per_unit: 2 }
      - key: plan
        value: free
        descriptors:
          - key: api_key
            rate_limit: { unit: minute, requests_per_unit: 100 }
  - domain: auth
    descriptors:
      - key: auth_type
        value: login
        rate_limit: { unit: minute, requests_per_unit: 5 }
`,
  { filename: 'rules.yaml' },
);

const e = (...pairs: [string, string][]): DescriptorEntry[] => pairs.map(([key, value]) => ({ key, value }));
const match = (domain: string, ...pairs: [string, string][]) => rules.matchDescriptor(domain, e(...pairs))?.id;

describe('matchDescriptor', () => {
  it('the notes: marketing messages 5 per day, logins 5 per minute', () => {
    expect(rules.matchDescriptor('messaging', e(['message_type', 'marketing']))?.policy).toMatchObject({ limit: 5, windowMs: 86_400_000 });
    expect(rules.matchDescriptor('auth', e(['auth_type', 'login']))?.policy).toMatchObject({ limit: 5, windowMs: 60_000 });
  });

  it('an exact value beats a node without a value', () => {
    expect(match('messaging', ['message_type', 'marketing'])).toBe('messaging/message_type=marketing');
    expect(match('messaging', ['message_type', 'receipt'])).toBe('messaging/message_type');
  });

  it('exact beats the longest prefix, which beats a shorter prefix, which beats *', () => {
    expect(match('api', ['route', '/v1/health'])).toBe('api/route=/v1/health');
    expect(match('api', ['route', '/v1/admin/users'], ['user', 'u1'])).toBe('api/route=/v1/admin/*/user');
    expect(match('api', ['route', '/v1/orders'], ['user', 'u1'])).toBe('api/route=/v1/*/user');
    expect(match('api', ['route', '/v2/orders'], ['user', 'u1'])).toBe('api/route=*/user');
  });

  it('no backtracking: the exact node is chosen even when its subtree has nothing for the next entry', () => {
    // /v1/health is exact and unlimited; a deeper descriptor does not fall back to the /v1/* branch.
    expect(match('api', ['route', '/v1/health'], ['user', 'u1'])).toBeUndefined();
  });

  it('every entry must be consumed, and the node reached must limit', () => {
    expect(match('api', ['route', '/v1/orders'])).toBeUndefined(); // the /v1/* node itself has no limit
    expect(match('api', ['plan', 'free'], ['api_key', 'h'], ['extra', 'x'])).toBeUndefined();
    expect(match('api', ['plan', 'free'])).toBeUndefined();
    expect(match('api', ['plan', 'free'], ['api_key', 'h'])).toBe('api/plan=free/api_key');
  });

  it('values are matched exactly (case-sensitive) and keys must exist', () => {
    expect(match('api', ['plan', 'FREE'], ['api_key', 'h'])).toBeUndefined();
    expect(match('api', ['colour', 'blue'])).toBeUndefined();
  });

  it('an exception below a broader rule is an unlimited rule', () => {
    const root = rules.matchDescriptor('api', e(['tenant', 't1'], ['user', 'root']));
    expect(root).toMatchObject({ id: 'api/tenant/user=root', unlimited: true, policy: null });
    expect(match('api', ['tenant', 't1'], ['user', 'alice'])).toBe('api/tenant/user');
  });

  it('unknown domains and empty descriptors match nothing', () => {
    expect(match('nope', ['route', '/v1/x'])).toBeUndefined();
    expect(rules.matchDescriptor('api', [])).toBeUndefined();
  });
});

describe('descriptorIdentity', () => {
  it('joins the pairs in order', () => {
    expect(descriptorIdentity(e(['tenant', 't1'], ['user', 'alice']))).toBe('tenant=t1&user=alice');
    expect(descriptorIdentity(e(['user', 'alice'], ['tenant', 't1']))).not.toBe(descriptorIdentity(e(['tenant', 't1'], ['user', 'alice'])));
  });

  it('values cannot be chosen to make two descriptors one identity', () => {
    const a = descriptorIdentity(e(['tenant', 'x&user=y'], ['user', 'z']));
    const b = descriptorIdentity(e(['tenant', 'x'], ['user', 'y&user=z']));
    expect(a).not.toBe(b);
    expect(a).toBe('tenant=x%26user%3Dy&user=z');
  });
});
