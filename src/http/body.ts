// JSON bodies: only application/json (415 otherwise), at most the configured size (413), and parsed
// by zod into a typed value (400 with every issue otherwise).
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { SluiceError } from '../errors.js';
import { describeIssues, issuesOf } from '../validation.js';

/** Refuses a body that is not JSON before anything reads it. */
export function requireJson(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('application/json')) {
      next(new SluiceError('SLUICE_ERR_UNSUPPORTED_MEDIA_TYPE', `content type must be application/json (got ${req.headers['content-type'] ?? 'none'})`));
      return;
    }
    next();
  };
}

/** express.json with a byte limit; its errors (413, 400) reach the app's error handler. */
export function jsonBody(limitBytes: number): RequestHandler {
  return express.json({ limit: limitBytes, type: 'application/json', strict: false });
}

/** Parses `req.body` with `schema`; throws SLUICE_ERR_INVALID_REQUEST (400) whose details are every zod issue. */
export function parseBody<S extends z.ZodType>(schema: S, req: Request): z.infer<S> {
  const parsed = schema.safeParse(req.body);
  if (parsed.success) return parsed.data;
  const issues = issuesOf(parsed.error);
  throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', `invalid request body: ${describeIssues(issues)}`, { details: issues });
}
