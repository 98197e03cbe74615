// The dashboard's session value: signed with the admin token's digest, never holding the token,
// refused when expired, tampered with, or signed by another token.
import { describe, expect, it } from 'vitest';
import { AdminToken, SESSION_MS } from '../../../src/auth/admin-token.js';

const TOKEN = 'session-test-admin-token-0123';
const NOW = 1_796_000_000_000;

describe('AdminToken sessions', () => {
  const token = new AdminToken(TOKEN);

  it('signs an expiry: accepted until it passes, never containing the token', () => {
    const session = token.session(NOW)!;
    expect(session).toMatch(new RegExp(`^v1\\.${NOW + SESSION_MS}\\.[A-Za-z0-9_-]{43}$`));
    expect(session).not.toContain(TOKEN);
    expect(token.acceptsSession(session, NOW)).toBe(true);
    expect(token.acceptsSession(session, NOW + SESSION_MS - 1)).toBe(true);
    expect(token.acceptsSession(session, NOW + SESSION_MS)).toBe(false);
  });

  it('refuses a changed expiry, a changed signature, another token\'s session and no token at all', () => {
    const session = token.session(NOW)!;
    const [v, exp, sig] = session.split('.');
    expect(token.acceptsSession(`${v}.${Number(exp) + 1000}.${sig}`, NOW)).toBe(false);
    expect(token.acceptsSession(`${v}.${exp}.${sig!.slice(0, -1)}${sig!.endsWith('A') ? 'B' : 'A'}`, NOW)).toBe(false);
    expect(new AdminToken('another-admin-token-0123456').acceptsSession(session, NOW)).toBe(false);
    expect(new AdminToken(undefined).session(NOW)).toBeUndefined();
    expect(new AdminToken(undefined).acceptsSession(session, NOW)).toBe(false);
    for (const bad of ['', 'v1', `v2.${exp}.${sig}`, `v1.${exp}`, TOKEN]) expect(token.acceptsSession(bad, NOW)).toBe(false);
  });
});
