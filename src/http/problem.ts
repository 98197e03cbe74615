// The one JSON error shape every route answers with, and the mapping from errors to it.
import type { Response } from 'express';
import { isSluiceError } from '../errors.js';
import type { Issue } from '../validation.js';

/** `{ error, message, issues? }` — `error` is a stable snake_case code clients can branch on. */
export interface Problem {
  error: string;
  message: string;
  issues?: Issue[];
}

const BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limit_exceeded',
  500: 'internal_error',
  503: 'service_unavailable',
};

export function sendProblem(res: Response, status: number, message: string, issues?: Issue[]): void {
  const body: Problem = { error: BY_STATUS[status] ?? 'error', message };
  if (issues) body.issues = issues;
  res.status(status).json(body);
}

/** Maps any thrown error to a status and problem: SluiceErrors by their code, body-parser errors by their type. */
export function problemOf(error: unknown): { status: number; message: string; issues?: Issue[] } {
  if (isSluiceError(error)) {
    const issues = Array.isArray(error.details) ? (error.details as Issue[]) : undefined;
    return { status: error.httpStatus, message: error.message, ...(issues ? { issues } : {}) };
  }
  const e = error as { type?: string; status?: number; limit?: number; message?: string };
  if (e?.type === 'entity.too.large') return { status: 413, message: `request body is larger than the limit of ${e.limit} bytes` };
  if (e?.type === 'entity.parse.failed') return { status: 400, message: `request body is not valid JSON: ${e.message}` };
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') return { status: 415, message: e.message ?? 'unsupported encoding' };
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return { status: e.status, message: e.message ?? 'bad request' };
  return { status: 500, message: 'internal error' };
}
