// Retry-After in whole seconds: the one formula behind the header and every `retry_after` body field.

/**
 * `ms` as Retry-After seconds: rounded up and at least 1 (RFC 9110 §10.2.3), so a client that obeys
 * it is never early and never told "now" by a refusal.
 */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
