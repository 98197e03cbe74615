// The key builder: versioned keys, the hash tag around the unit of atomicity, and identities that
// can neither leak a secret nor break the key grammar.
import { describe, expect, it } from 'vitest';
import { KeyBuilder } from '../../src/redis/keys.js';
import { isSluiceError } from '../../src/index.js';

const keys = new KeyBuilder('sluice');

describe('KeyBuilder', () => {
  it('builds versioned keys with the hash tag around policy and identity', () => {
    expect(keys.limiter('api', 'user-42', 't')).toBe('sluice:2{api:user-42}t');
    expect(keys.throttleTag('payments')).toBe('sluice:v1:{t:payments}');
  });

  it('keeps a `:` verbatim in a limiter identity, and no two (policy, identity) pairs make one key', () => {
    for (const id of ['u:123', '2001:db8::1', 'tenant:7:user:9']) expect(keys.limiterIdentity(id)).toBe(id);
    // A policy name has no `:` (NAME_PATTERN) and an identity no `{` or `}`: the key parses one way only.
    const made = new Set<string>();
    for (const [ns, id] of [['a', 'b:c'], ['a', 'b'], ['b', 'c'], ['a', '#b'], ['a', 'b:c:d']] as const) made.add(keys.limiter(ns, keys.limiterIdentity(id), 't'));
    expect(made.size).toBe(5);
    // `{`, `}`, spaces, long values are still hashed; a throttle lane still hashes a `:`.
    for (const id of ['evil}{other', 'a b', 'x'.repeat(65)]) expect(keys.limiterIdentity(id)).toMatch(/^#[A-Za-z0-9_-]{14}$/);
    expect(keys.identity('u:123')).toMatch(/^#[A-Za-z0-9_-]{22}$/);
  });

  it('hashes a sensitive limiter identity to 14 characters: a 40-character API key makes a 30-character key', () => {
    const apiKey = 'sk_live_' + 'a1B2c3D4'.repeat(4);
    expect(apiKey).toHaveLength(40);
    const id = keys.limiterIdentity(apiKey, { sensitive: true });
    expect(id).toMatch(/^#[A-Za-z0-9_-]{14}$/);
    expect(id).not.toContain(apiKey);
    expect(keys.limiter('api', id, 't')).toHaveLength(30);
    expect(keys.limiterIdentity(apiKey, { sensitive: true })).toBe(id); // stable
  });

  it('keeps short safe identities verbatim', () => {
    for (const id of ['user-42', 'tenant_7', 'a.b@c.d', '10.0.0.1', 'x'.repeat(64)]) expect(keys.identity(id)).toBe(id);
  });

  it.each([
    ['a hash-tag brace', 'evil}{other'],
    ['a colon', 'a:b'],
    ['whitespace', 'a b'],
    ['a newline', 'a\nb'],
    ['a control character', 'a\u0000b'],
    ['an IPv6 address', '2001:db8::1'],
    ['a long value', 'x'.repeat(65)],
  ])('hashes an identity with %s', (_what, id) => {
    const out = keys.identity(id);
    expect(out).toMatch(/^#[A-Za-z0-9_-]{22}$/);
    expect(out).not.toContain(id);
    expect(keys.identity(id)).toBe(out); // stable
  });

  it('always hashes a sensitive identity (an API key never reaches Redis)', () => {
    const apiKey = 'sk_live_abc123';
    const out = keys.identity(apiKey, { sensitive: true });
    expect(out).toMatch(/^#/);
    expect(keys.limiter('api', out, 'tb')).not.toContain(apiKey);
  });

  it('uses the HMAC secret when one is configured', () => {
    const keyed = new KeyBuilder('sluice', 'secret');
    expect(keyed.identity('a:b')).not.toBe(keys.identity('a:b'));
  });

  it('different identities never collide on the same hash tag grammar', () => {
    expect(keys.identity('a:b')).not.toBe(keys.identity('a;b'));
  });

  it.each([[''], ['UPPER'], ['has space'], ['x'.repeat(40)]])('refuses the prefix %j', (prefix) => {
    expect(() => new KeyBuilder(prefix)).toThrow(/prefix/);
  });

  it('refuses an empty key', () => {
    try {
      keys.identity('');
      expect.unreachable();
    } catch (e) {
      expect(isSluiceError(e, 'SLUICE_ERR_INVALID_KEY')).toBe(true);
    }
  });
});
