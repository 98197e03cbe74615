// The one JSON error shape every route answers with, and the mapping from any error to it: every
// failure becomes a SluiceError first (its code says the status), then `{ error, code, message, issues? }`.
import type { Response } from 'express';
import { JsonTooDeep } from './body.js';
import { SluiceError, isSluiceError } from '../errors.js';
import type { Issue } from '../validation.js';

/** `error` is a stable snake_case name of the HTTP status; `code` the SluiceError code. */
export interface Problem {
  error: string;
  code: string;
  message: string;
  issues?: Issue[];
  /** A 409's job state, a 503's reason (`draining`). */
  state?: string;
  reason?: string;
}

const BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limit_exceeded',
  500: 'internal_error',
  503: 'service_unavailable',
};

/** The `error` name of an HTTP status, for problems and refusals alike. */
export function problemName(status: number): string {
  return BY_STATUS[status] ?? 'error';
}

/** Any thrown value as a SluiceError: SluiceErrors as they are, body-parser errors by their type, the rest internal. */
export function asSluiceError(error: unknown): SluiceError {
  if (isSluiceError(error)) return error;
  if (error instanceof JsonTooDeep) return error.toSluiceError();
  const e = error as { type?: string; status?: number; limit?: number; message?: string };
  if (e?.type === 'entity.too.large') return new SluiceError('SLUICE_ERR_BODY_TOO_LARGE', `request body is larger than the limit of ${e.limit} bytes`);
  if (e?.type === 'entity.parse.failed') return new SluiceError('SLUICE_ERR_INVALID_REQUEST', `request body is not valid JSON: ${e.message}`);
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new SluiceError('SLUICE_ERR_UNSUPPORTED_MEDIA_TYPE', e.message ?? 'unsupported body encoding');
  }
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return new SluiceError('SLUICE_ERR_INVALID_REQUEST', e.message ?? 'bad request');
  return new SluiceError('SLUICE_ERR_INTERNAL', 'internal error', { cause: error });
}

/** Answers with the problem of `error`. */
export function sendError(res: Response, error: SluiceError): void {
  const issues = Array.isArray(error.details) ? (error.details as Issue[]) : undefined;
  const body: Problem = { error: problemName(error.httpStatus), code: error.code, message: error.message };
  if (issues) body.issues = issues;
  const extra = !issues && typeof error.details === 'object' && error.details !== null ? (error.details as { state?: unknown; reason?: unknown }) : {};
  if (typeof extra.state === 'string') body.state = extra.state;
  if (typeof extra.reason === 'string') body.reason = extra.reason;
  res.status(error.httpStatus).json(body);
}
