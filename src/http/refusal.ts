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
  // Written directly, not through res.json(): express would hash the body for an ETag (a SHA-1 per
  // refusal, for a response no cache keeps) and look at the request's freshness, which a 429 never has.
  const body = refusalBody(retryAfter, reason, message);
  res.statusCode = 429;
  res.setHeader('Content-Type', JSON_TYPE);
  res.setHeader('Content-Length', body.length);
  res.end(body);
}

/**
 * The 429 of a refusal whose headers are given as `[name, value, name, value, ...]`, in the order
 * they are sent: the same bytes as setting each and then `sendRefusalBody`. When nothing set a header
 * before (no `X-Powered-By`, no CORS), the status line, headers and body go out in one `writeHead`
 * and `end`, without a header map; else each is set as `sendRefusalBody` would, so a header another
 * middleware set keeps its place.
 */
export function sendRefusalWith(res: Response, headers: string[], retryAfter: number, reason: string | undefined, message: string): void {
  const body = refusalBody(retryAfter, reason, message);
  if (res.getHeaderNames().length === 0 && !res.headersSent) {
    headers.push('Content-Type', JSON_TYPE, 'Content-Length', String(body.length));
    res.writeHead(429, headers);
    res.end(body);
    return;
  }
  for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i]!, headers[i + 1]!);
  sendRefusalBody(res, retryAfter, reason, message);
}

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The body's bytes, made once while the refusals repeat: the refusals of one client (or of many on
 * one rule) within a second carry the same Retry-After and so the same message.
 */
let last: { retryAfter: number; reason: string | undefined; message: string; body: Buffer } | undefined;

function refusalBody(retryAfter: number, reason: string | undefined, message: string): Buffer {
  const l = last;
  if (l && l.retryAfter === retryAfter && l.message === message && l.reason === reason) return l.body;
  const b: RefusalBody = { error: REFUSAL_ERROR, retry_after: retryAfter, ...(reason !== undefined ? { reason } : {}), message };
  const body = Buffer.from(JSON.stringify(b));
  last = { retryAfter, reason, message, body };
  return body;
}

const REFUSAL_ERROR = problemName(429);
