// The one place Redis keys are made: `<prefix>:v1:{<unit of atomicity>}:<suffix>` for throttles and
// control state, and the shorter `<prefix>:2{<policy>:<identity>}<letter>` for decision limiters.
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

/** Bumped when the layout of a throttle or control key or value changes, so old state is never misread. */
export const KEY_VERSION = 'v1';
/**
 * The decision limiters' own layout version (their keys changed on their own: a throttle's queued jobs
 * must not be stranded by a limiter layout change). 2: no `v`, no `:` around the hash tag, a one-letter
 * algorithm suffix, `:` kept verbatim in identities, 14-character identity hashes
 * (docs/decisions/memory-per-key.md: each saves key-name bytes, which Redis rounds up in 16-byte steps).
 */
export const LIMITER_KEY_VERSION = '2';

/** Characters an identity may keep verbatim; anything else (`{`, `}`, `:`, spaces, controls, ...) forces a hash. */
const SAFE_IDENTITY = /^[A-Za-z0-9._@+=/-]{1,64}$/;
/**
 * A limiter identity may also keep `:` (`user:42`, an IPv6 address): inside `{<policy>:<identity>}` the
 * policy name has no `:`, so the first `:` ends it, and the identity has no `}`, so the tag still ends
 * at the first `}`: no two (policy, identity) pairs make the same key. Throttle lanes keep SAFE_IDENTITY
 * (their keys append `:q`, `:o` to the lane, which a `:` in it would make ambiguous).
 */
const SAFE_LIMITER_IDENTITY = /^[A-Za-z0-9._@+=/:-]{1,64}$/;
/**
 * Characters of a limiter identity's hash: 84 bits. Two identities of one policy share state only when
 * their hashes collide: about n² / 2^85 for n identities (3e-8 at a billion), and finding a second
 * identity for a given one takes ~2^84 SHA-256s (none without the HMAC secret). 14 rather than 22
 * keeps a hashed API key's key within 30 characters (one 16-byte allocation step less).
 */
const LIMITER_HASH_CHARS = 14;
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

  /**
   * The identity segment of a decision limiter's key: verbatim when short and safe (`:` allowed, see
   * SAFE_LIMITER_IDENTITY), otherwise `#` + 14 base64url chars of its hash.
   */
  limiterIdentity(value: string, options: IdentityOptions = {}): string {
    if (typeof value !== 'string' || value.length === 0) {
      throw new SluiceError('SLUICE_ERR_INVALID_KEY', 'key: must be a non-empty string');
    }
    if (!options.sensitive && SAFE_LIMITER_IDENTITY.test(value)) return value;
    return '#' + this.hash(value, LIMITER_HASH_CHARS);
  }

  /** A stable short hash (22 base64url chars, 132 bits, unless told fewer) of a value, keyed when a secret is configured. */
  hash(value: string, chars = 22): string {
    if (this.hashSecret) return createHmac('sha256', this.hashSecret).update(value).digest('base64url').slice(0, chars);
    // The one-shot hash() (Node >= 20.12) is the same SHA-256 without a Hash object: ~0.3 µs instead of ~0.8 µs,
    // and a sensitive or long identity is hashed on every decision.
    if (oneShotHash) return oneShotHash('sha256', value, 'base64url').slice(0, chars);
    return createHash('sha256').update(value).digest('base64url').slice(0, chars);
  }

  /**
   * Key of a decision limiter's state, `<prefix>:2{<namespace>:<identity>}<suffix>`: the hash tag holds
   * the policy namespace and the identity (from {@link limiterIdentity}); the suffix is the algorithm's
   * letter. With a `slot` segment (an identity segment too: a rule's `slot_key`), the tag holds the slot
   * and the namespace and identity follow it, `<prefix>:2{<slot>}<namespace>[:<identity>]<suffix>`, the
   * identity left out when it is the slot itself (so the key is no longer than without a slot). The
   * three forms never meet: a namespace has no ':', and the suffix is one letter.
   */
  limiter(namespace: string, identity: string, suffix: string, slot?: string): string {
    if (slot === undefined) return `${this.prefix}:${LIMITER_KEY_VERSION}{${namespace}:${identity}}${suffix}`;
    if (slot === identity) return `${this.prefix}:${LIMITER_KEY_VERSION}{${slot}}${namespace}${suffix}`;
    return `${this.prefix}:${LIMITER_KEY_VERSION}{${slot}}${namespace}:${identity}${suffix}`;
  }

  /** The hash tag shared by every key of one throttle (its lanes, its global meter and its BullMQ queue). */
  throttleTag(name: string, shardSuffix = ''): string {
    assertName(name, 'throttle name');
    return `${this.prefix}:${KEY_VERSION}:{t:${name}${shardSuffix}}`;
  }
}

/** Throws unless `name` is a safe policy or throttle name (letters, digits, `.`, `_`, `-`; at most 64). */
export function assertName(name: string, what: string): void {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new SluiceError('SLUICE_ERR_INVALID_OPTIONS', `${what}: must match ${NAME_PATTERN} (got '${String(name)}')`);
  }
}
