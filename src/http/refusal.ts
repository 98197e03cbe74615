// The one 429 of every refusal (the decision middleware, a queue submit): the rate-limit headers from
// the one serialiser, Retry-After always (a client told "no" is told when, whatever sets the rules
// switch off), and the JSON body whose retry_after is that same number, computed once.
import type { Response } from 'express';
import { retryAfterSeconds, serialiseHeaders, type HeaderFacts, type HeaderSelection } from '../headers/headers.js';
import { problemName } from './problem.js';

/** The body of a 429: `reason` only where a refusal has several (a queue: full, or the wait too long). */
export interface RefusalBody {
  error: string;
  retry_after: number;
  reason?: string;
  message: string;
}

export interface Refusal {
  /** What the headers say; its `retryAfterSeconds` is the header's and the body's (1 s when it names none). */
  facts: HeaderFacts;
  /** Which header sets to send besides Retry-After. */
  selection?: HeaderSelection;
  reason?: string;
  /** The message, given the Retry-After seconds. */
  message: (retryAfter: number) => string;
}

/** Answers 429 with the refusal's headers and body. */
export function sendRefusal(res: Response, refusal: Refusal): void {
  const retryAfter = refusal.facts.retryAfterSeconds ?? retryAfterSeconds(0);
  const facts = { ...refusal.facts, retryAfterSeconds: retryAfter };
  for (const [name, value] of serialiseHeaders(facts, { ...refusal.selection, retryAfter: true })) res.setHeader(name, value);
  sendRefusalBody(res, retryAfter, refusal.reason, refusal.message(retryAfter));
}

/** The 429 status and JSON body of a refusal whose headers are already set (Retry-After = `retryAfter`). */
export function sendRefusalBody(res: Response, retryAfter: number, reason: string | undefined, message: string): void {
  const body: RefusalBody = { error: REFUSAL_ERROR, retry_after: retryAfter, ...(reason !== undefined ? { reason } : {}), message };
  // Written directly, not through res.json(): express would hash the body for an ETag (a SHA-1 per
  // refusal, for a response no cache keeps) and look at the request's freshness, which a 429 never has.
  const json = JSON.stringify(body);
  res.statusCode = 429;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

const REFUSAL_ERROR = problemName(429);
