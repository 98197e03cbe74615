// JSON bodies: only application/json (415 otherwise), at most the configured size (413), and parsed
// by zod into a typed value (400 with every issue otherwise).
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { issuesOf } from '../validation.js';
import { sendProblem } from './problem.js';

/** Refuses a body that is not JSON before anything reads it. */
export function requireJson(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('application/json')) {
      sendProblem(res, 415, `content type must be application/json (got ${req.headers['content-type'] ?? 'none'})`);
      return;
    }
    next();
  };
}

/** express.json with a byte limit; its errors (413, 400) reach the app's error handler. */
export function jsonBody(limitBytes: number): RequestHandler {
  return express.json({ limit: limitBytes, type: 'application/json', strict: false });
}

/** Parses `req.body` with `schema`; on failure answers 400 with the zod issue list and returns undefined. */
export function parseBody<S extends z.ZodType>(schema: S, req: Request, res: Response): z.infer<S> | undefined {
  const parsed = schema.safeParse(req.body);
  if (parsed.success) return parsed.data;
  const issues = issuesOf(parsed.error);
  sendProblem(res, 400, `invalid request body: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
  return undefined;
}
