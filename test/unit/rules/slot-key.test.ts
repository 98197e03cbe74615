// The rules' slot_key: set, turned off, or by default the client-identity key most http templates share.
import { describe, expect, it } from 'vitest';
import { parseRules } from '../../../src/index.js';

const file = (descriptors: string, slotKey = '') => `${slotKey}domains:
  - domain: api
    descriptors:
      - key: ip
        rate_limit: { unit: second, requests_per_unit: 10 }
route_groups:
  search: ["/search"]
http:
  domain: api
  plan: { default: free }
  descriptors: ${descriptors}
`;

const slotKeyOf = (text: string) => parseRules(text, { filename: 'slot.yaml' }).slotKey;

describe('slot_key', () => {
  it('defaults to the client-identity key the most templates share', () => {
    expect(slotKeyOf(file('[[api_key], [plan, api_key], [route, ip], [{ key: tenant, source: "header:X-Tenant" }, api_key], [{ key: global, value: all }]]'))).toBe('api_key');
    expect(slotKeyOf(file('[[ip], [route, ip], [route]]'))).toBe('ip');
    // A renamed entry counts by its key.
    expect(slotKeyOf(file('[[{ key: client, source: ip }], [route, { key: client, source: ip }]]'))).toBe('client');
    // A tie goes to api_key, then user, then ip.
    expect(slotKeyOf(file('[[ip, api_key], [route, ip, api_key]]'))).toBe('api_key');
  });

  it('has no default when no client key is shared by two templates, or never from plan, route or literals', () => {
    expect(slotKeyOf(file('[[ip], [api_key]]'))).toBeUndefined();
    expect(slotKeyOf(file('[[plan], [plan, route]]'))).toBeUndefined();
    expect(slotKeyOf(file('[[route], [route, method]]'))).toBeUndefined();
  });

  it('is what the file sets, or nothing with false or without an http section', () => {
    expect(slotKeyOf(file('[[ip], [route, ip]]', 'slot_key: user\n'))).toBe('user');
    expect(slotKeyOf(file('[[ip], [route, ip]]', 'slot_key: false\n'))).toBeUndefined();
    expect(slotKeyOf('domains:\n  - domain: api\n    descriptors:\n      - key: ip\n        rate_limit: { unit: second, requests_per_unit: 10 }\n')).toBeUndefined();
  });
});
