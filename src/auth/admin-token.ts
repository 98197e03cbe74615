// The admin token (SLUICE_ADMIN_TOKEN): hashed when the process starts, compared in constant time,
// never logged. Without one, the admin API is off and every admin route answers 401.
// It also signs the dashboard's sessions: a cookie holds an expiry and an HMAC of it keyed by the
// token's digest, never the token, so every server with the same token accepts it and a new token
// ends every session.
import { createHmac } from 'node:crypto';
import { digestOf, fingerprint, sameDigest } from './key-hash.js';

/** A dashboard session lasts this long (ms) after the login. */
export const SESSION_MS = 12 * 3_600_000;

export class AdminToken {
  private readonly digest: Buffer | undefined;
  /** 8 hex chars of the token's hash: which token an audit entry was made with, without the token. */
  readonly fingerprint: string | undefined;

  constructor(token: string | undefined) {
    this.digest = token ? digestOf(token) : undefined;
    this.fingerprint = this.digest ? fingerprint(this.digest) : undefined;
  }

  get enabled(): boolean {
    return this.digest !== undefined;
  }

  /** True when `presented` is the admin token. */
  accepts(presented: string | undefined): boolean {
    if (!this.digest || presented === undefined) return false;
    return sameDigest(this.digest, digestOf(presented));
  }

  /** A session value (`v1.<expiry ms>.<signature>`) valid until `nowMs + SESSION_MS`; undefined when the admin API is off. */
  session(nowMs: number): string | undefined {
    if (!this.digest) return undefined;
    const expires = String(nowMs + SESSION_MS);
    return `v1.${expires}.${this.sign(this.digest, expires)}`;
  }

  /** True when `value` is a session this token signed and it has not expired. */
  acceptsSession(value: string | undefined, nowMs: number): boolean {
    if (!this.digest || value === undefined) return false;
    const m = /^v1\.(\d{1,15})\.([A-Za-z0-9_-]{43})$/.exec(value);
    if (!m || Number(m[1]) <= nowMs) return false;
    return sameDigest(Buffer.from(this.sign(this.digest, m[1]!), 'base64url'), Buffer.from(m[2]!, 'base64url'));
  }

  private sign(key: Buffer, expires: string): string {
    return createHmac('sha256', key).update(`sluice-ui-session:${expires}`).digest('base64url');
  }
}
