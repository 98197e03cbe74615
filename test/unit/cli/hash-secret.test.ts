// Issue 8, defect 7: a process without SLUICE_HASH_SECRET warns at start, and refuses in production mode (SLUICE_REQUIRE_HASH_SECRET=true).
import { describe, expect, it } from 'vitest';
import { checkHashSecret } from '../../../src/cli/hash-secret.js';
import { isSluiceError } from '../../../src/index.js';

describe('SLUICE_HASH_SECRET at start', () => {
  it('unset: a warning that says why; set: nothing', () => {
    const r = checkHashSecret(undefined, undefined);
    expect(r.action).toBe('warn');
    expect(r.action === 'warn' && r.message).toMatch(/SLUICE_HASH_SECRET is not set: .*job ids derived from idempotency keys are unkeyed SHA-256/);
    expect(checkHashSecret(undefined, 'false').action).toBe('warn');
    expect(checkHashSecret('s3cret', undefined)).toEqual({ action: 'ok' });
    expect(checkHashSecret('s3cret', 'true')).toEqual({ action: 'ok' });
  });

  it('unset with SLUICE_REQUIRE_HASH_SECRET=true: refused with SLUICE_ERR_INVALID_CONFIG', () => {
    const r = checkHashSecret(undefined, 'true');
    expect(r.action).toBe('refuse');
    expect(r.action === 'refuse' && isSluiceError(r.error, 'SLUICE_ERR_INVALID_CONFIG')).toBe(true);
    expect(r.action === 'refuse' && r.error.message).toMatch(/is required \(SLUICE_REQUIRE_HASH_SECRET=true\)/);
  });
});
