// The admin token (SLUICE_ADMIN_TOKEN): hashed when the process starts, compared in constant time,
// never logged. Without one, the admin API is off and every admin route answers 401.
import { digestOf, fingerprint, sameDigest } from './key-hash.js';

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
}
