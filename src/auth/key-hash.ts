// API keys and admin tokens as SHA-256 digests: how a presented secret is hashed, and the
// constant-time comparison of two digests. Raw secrets are hashed here and never kept.
import { createHash, timingSafeEqual } from 'node:crypto';

/** The SHA-256 of a secret, as 32 bytes. */
export function digestOf(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

/** `sha256:<hex>` as 32 bytes. */
export function digestOfSpec(spec: string): Buffer {
  return Buffer.from(spec.slice('sha256:'.length), 'hex');
}

/** Constant-time equality of two digests (different lengths are simply unequal). */
export function sameDigest(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A short, non-reversible label of a secret for audit lines: 8 hex chars of its SHA-256. */
export function fingerprint(digest: Buffer): string {
  return digest.toString('hex').slice(0, 8);
}
