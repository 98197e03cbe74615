// Retry-After in whole seconds: the one formula behind the header and every `retry_after` body field,
// for one wait and for a refusal by several decisions.

/**
 * `ms` as Retry-After seconds: rounded up and at least 1 (RFC 9110 §10.2.3), so a client that obeys
 * it is never early and never told "now" by a refusal.
 */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/**
 * The Retry-After seconds of decisions a request needs all of: the longest wait among those that
 * refused (fail-closed ones refuse too); undefined when none refused.
 */
export function refusalSeconds(decisions: readonly { readonly allowed: boolean; readonly retryAfterMs: number }[]): number | undefined {
  const waits = decisions.filter((d) => !d.allowed).map((d) => d.retryAfterMs);
  return waits.length ? retryAfterSeconds(Math.max(...waits)) : undefined;
}
