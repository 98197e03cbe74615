// What a process does without SLUICE_HASH_SECRET. Without it, identity hashes and the job ids derived
// from idempotency keys are a plain SHA-256 of public inputs (queue name + key): the same in every
// deployment, so anyone who can guess a key can compute its job id and hash. A warning at start, and a
// refusal in production mode: SLUICE_REQUIRE_HASH_SECRET=true. Not NODE_ENV=production: the image sets
// that for Node's sake, and the compose demo would then refuse to start until a secret is chosen.
import { SluiceError } from '../errors.js';

export type HashSecretCheck = { action: 'ok' } | { action: 'warn'; message: string } | { action: 'refuse'; error: SluiceError };

const WHY =
  'without it, identity hashes and job ids derived from idempotency keys are unkeyed SHA-256 of the queue and key, the same in every deployment and computable by anyone';

export function checkHashSecret(hashSecret: string | undefined, requireSecret: string | undefined): HashSecretCheck {
  if (hashSecret) return { action: 'ok' };
  if (requireSecret === 'true' || requireSecret === '1') {
    return {
      action: 'refuse',
      error: new SluiceError('SLUICE_ERR_INVALID_CONFIG', `invalid configuration: SLUICE_HASH_SECRET is required (SLUICE_REQUIRE_HASH_SECRET=true): ${WHY}`),
    };
  }
  return { action: 'warn', message: `SLUICE_HASH_SECRET is not set: ${WHY}; set it (the same value on every process), and SLUICE_REQUIRE_HASH_SECRET=true makes it required` };
}
