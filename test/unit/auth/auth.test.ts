// API keys and the admin token: configured as hashes (or read from env/file and hashed at once),
// looked up from either header, compared in constant time; the auth section's cross-field checks.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AdminToken } from '../../../src/auth/admin-token.js';
import { presentedKey } from '../../../src/auth/credentials.js';
import { authIssues } from '../../../src/auth/issues.js';
import { authSchema } from '../../../src/auth/schema.js';
import { compileAuth } from '../../../src/auth/tenant-keys.js';

const sha = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

describe('tenant keys', () => {
  it('maps keys given as hashes, env variables and files to their tenant; nothing else matches', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-auth-'));
    writeFileSync(join(dir, 'globex.key'), 'globex-key-from-file\n');
    const spec = authSchema.parse({
      tenants: {
        acme: { plan: 'pro', keys: [sha('acme-old'), sha('acme-new')] },
        globex: { keys: [{ env: 'GLOBEX_KEY' }, { file: 'globex.key' }] },
      },
    });
    const { auth, problems } = compileAuth(spec, dir, { GLOBEX_KEY: 'globex-key-from-env' });
    expect(problems).toEqual([]);
    if (auth.mode !== 'keys') throw new Error('expected keys');
    expect(auth.keys.tenantOf('acme-old')).toEqual({ name: 'acme', plan: 'pro' });
    expect(auth.keys.tenantOf('acme-new')).toEqual({ name: 'acme', plan: 'pro' });
    expect(auth.keys.tenantOf('globex-key-from-env')).toEqual({ name: 'globex' });
    expect(auth.keys.tenantOf('globex-key-from-file')).toEqual({ name: 'globex' });
    expect(auth.keys.tenantOf('acme')).toBeUndefined();
    expect(auth.keys.tenantOf(sha('acme-old'))).toBeUndefined();
    expect(auth.keys.tenantOf('')).toBeUndefined();
    expect(auth.keys.keyCount).toBe(4);
  });

  it('reports an unset variable or an unreadable file with its path', () => {
    const spec = authSchema.parse({ tenants: { a: { keys: [{ env: 'NOPE_NOT_SET' }, { file: '/nonexistent/k' }] } } });
    const { problems } = compileAuth(spec, '/', {});
    expect(problems).toEqual([
      { path: ['auth', 'tenants', 'a', 'keys', 0], message: 'environment variable NOPE_NOT_SET is not set' },
      { path: ['auth', 'tenants', 'a', 'keys', 1], message: 'cannot read key file /nonexistent/k: ENOENT' },
    ]);
  });

  it('refuses a raw key in the file', () => {
    const parsed = authSchema.safeParse({ tenants: { a: { keys: ['my-secret-key'] } } });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error!.issues)).toMatch(/never the key itself/);
    expect(authSchema.parse('none')).toBe('none');
  });
});

describe('credentials', () => {
  it('reads Authorization: Bearer and X-API-Key; anything else is no key', () => {
    expect(presentedKey({ authorization: 'Bearer abc' })).toBe('abc');
    expect(presentedKey({ authorization: 'bearer   abc  ' })).toBe('abc');
    expect(presentedKey({ 'x-api-key': 'xyz' })).toBe('xyz');
    expect(presentedKey({ authorization: 'Basic dXNlcjpwYXNz' })).toBeUndefined();
    expect(presentedKey({ authorization: 'Bearer ' })).toBeUndefined();
    expect(presentedKey({ 'x-api-key': '  ' })).toBeUndefined();
    expect(presentedKey({})).toBeUndefined();
  });
});

describe('admin token', () => {
  it('accepts only the token; without one nothing is accepted', () => {
    const token = new AdminToken('s3cret-admin-token');
    expect(token.enabled).toBe(true);
    expect(token.accepts('s3cret-admin-token')).toBe(true);
    expect(token.accepts('s3cret-admin-toke')).toBe(false);
    expect(token.accepts(undefined)).toBe(false);
    expect(token.fingerprint).toBe(createHash('sha256').update('s3cret-admin-token').digest('hex').slice(0, 8));
    const off = new AdminToken(undefined);
    expect(off.enabled).toBe(false);
    expect(off.accepts('')).toBe(false);
  });
});

describe('auth section checks', () => {
  it('names a duplicate key hash (with the first) and a plan no queue defines', () => {
    const data = {
      auth: { tenants: { a: { plan: 'gold', keys: [sha('k1')] }, b: { plan: 'pro', keys: [sha('k2'), sha('k1').toUpperCase().replace('SHA256', 'sha256')] } } },
      queues: [{ name: 'q', plans: { pro: {} } }],
    };
    expect(authIssues(data)).toEqual([
      { path: ['auth', 'tenants', 'a', 'plan'], message: "plan 'gold' is not defined by any queue's plans (known: pro)" },
      { path: ['auth', 'tenants', 'b', 'keys', 1], message: 'duplicate API key hash: a key belongs to one tenant, once', firstAt: ['auth', 'tenants', 'a', 'keys', 0] },
    ]);
  });
});
