// The one place Redis keys are made: `<prefix>:v1:{<unit of atomicity>}:<suffix>`.
//
// The hash tag `{...}` wraps the unit a script works on (one limiter identity, or one throttle), so on
// a Redis Cluster every key a script touches lives in one slot. Identity values that are long, carry
// characters that could break the grammar or the hash tag, or are marked sensitive are replaced by a
// hash: a raw API key never reaches Redis.
import * as crypto from 'node:crypto';
import { createHash, createHmac } from 'node:crypto';
import { SluiceError } from '../errors.js';

/** crypto.hash where this Node has it (20.12+), read through the namespace so older Nodes still load this module. */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: 'base64url') => string }).hash;

/** Bumped when the layout of any key or value changes, so old state is never misread. */
export const KEY_VERSION = 'v1';

/** Characters an identity may keep verbatim; anything else (`{`, `}`, `:`, spaces, controls, ...) forces a hash. */
const SAFE_IDENTITY = /^[A-Za-z0-9._@+=/-]{1,64}$/;
const SAFE_PREFIX = /^[a-z0-9][a-z0-9_-]{0,31}$/;
/**
 * A policy, rule, plan, domain, queue or throttle name: it ends up in key namespaces, metric labels and
 * logs. The one definition (the policy schema and the rules file use it too).
 */
export const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** How {@link NAME_PATTERN} reads in an error message. */
export const NAME_RULE = 'letters, digits, ".", "_", "-", starting with a letter or digit (at most 64)';

/** Marks an identity value as secret (an API key, a token): it is always hashed. */
export interface IdentityOptions {
  sensitive?: boolean;
  /**
   * The value whose hash tag the key takes instead of its own (hashed as the identity is): keys of one
   * `slot` value share a Redis Cluster slot, so one script call can decide them together
   * (src/limiters/all-or-nothing.ts). The rules' `slot_key` sets it to the client's descriptor entry.
   */
  slot?: string;
}

export class KeyBuilder {
  readonly prefix: string;
  private readonly hashSecret: string | undefined;

  /**
   * @param prefix      first key segment (default `sluice`): lowercase letters, digits, `_`, `-`.
   * @param hashSecret  optional HMAC secret for identity hashes, so low-entropy identities (emails,
   *                    IPs) cannot be recovered by brute force from a copy of Redis.
   */
  constructor(prefix = 'sluice', hashSecret?: string) {
    if (!SAFE_PREFIX.test(prefix)) {
      throw new SluiceError('SLUICE_ERR_INVALID_OPTIONS', `prefix: must match ${SAFE_PREFIX} (got '${prefix}')`);
    }
    this.prefix = prefix;
    this.hashSecret = hashSecret;
  }

  /** The identity segment for `value`: verbatim when short and safe, otherwise `#` + 22 base64url chars of its hash. */
  identity(value: string, options: IdentityOptions = {}): string {
    if (typeof value !== 'string' || value.length === 0) {
      throw new SluiceError('SLUICE_ERR_INVALID_KEY', 'key: must be a non-empty string');
    }
    if (!options.sensitive && SAFE_IDENTITY.test(value)) return value;
    return '#' + this.hash(value);
  }

  /** A stable short hash (22 base64url chars, 132 bits) of a value, keyed when a secret is configured. */
  hash(value: string): string {
    if (this.hashSecret) return createHmac('sha256', this.hashSecret).update(value).digest('base64url').slice(0, 22);
    // The one-shot hash() (Node >= 20.12) is the same SHA-256 without a Hash object: ~0.3 µs instead of ~0.8 µs,
    // and an identity with a ':' (an IP v6, "user:42") is hashed on every decision.
    if (oneShotHash) return oneShotHash('sha256', value, 'base64url').slice(0, 22);
    return createHash('sha256').update(value).digest('base64url').slice(0, 22);
  }

  /**
   * Key of a decision limiter's state: the hash tag holds the policy namespace and the identity; with a
   * `slot` segment (an identity segment too), the tag holds the slot and the namespace and identity follow
   * it, the identity left out when it is the slot itself (so the key is no longer than without a slot).
   */
  limiter(namespace: string, identity: string, suffix: string, slot?: string): string {
    if (slot === undefined) return `${this.prefix}:${KEY_VERSION}:{${namespace}:${identity}}:${suffix}`;
    if (slot === identity) return `${this.prefix}:${KEY_VERSION}:{${slot}}:${namespace}:${suffix}`;
    return `${this.prefix}:${KEY_VERSION}:{${slot}}:${namespace}:${identity}:${suffix}`;
  }

  /** The hash tag shared by every key of one throttle (its lanes, its global meter and its BullMQ queue). */
  throttleTag(name: string): string {
    assertName(name, 'throttle name');
    return `${this.prefix}:${KEY_VERSION}:{t:${name}}`;
  }
}

/** Throws unless `name` is a safe policy or throttle name (letters, digits, `.`, `_`, `-`; at most 64). */
export function assertName(name: string, what: string): void {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new SluiceError('SLUICE_ERR_INVALID_OPTIONS', `${what}: must match ${NAME_PATTERN} (got '${String(name)}')`);
  }
}
