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

/**
 * express.json with a byte limit and a nesting limit; its errors (413, 400) reach the app's error
 * handler. The depth is checked on the raw bytes, before anything parses or walks the body.
 */
export function jsonBody(limitBytes: number, maxDepth: number): RequestHandler {
  return express.json({
    limit: limitBytes,
    type: 'application/json',
    strict: false,
    verify: (_req, _res, buf) => checkJsonDepth(buf, maxDepth),
  });
}

/**
 * A body nested too deep, in body-parser's error style (it sets `status` on what verify throws); the
 * app's error handler turns it into SLUICE_ERR_INVALID_REQUEST with the issue.
 */
export class JsonTooDeep extends Error {
  readonly type = 'entity.too.deep';
  readonly status = 400;
  constructor(readonly maxDepth: number) {
    super(`JSON nests deeper than ${maxDepth} levels (the maximum, SLUICE_JSON_MAX_DEPTH)`);
  }

  toSluiceError(): SluiceError {
    return new SluiceError('SLUICE_ERR_INVALID_REQUEST', `invalid request body: ${this.message}`, { details: [{ path: '', message: this.message }] });
  }
}

/**
 * Throws JsonTooDeep when the arrays and objects of the JSON text `buf` nest deeper than
 * `maxDepth`. One loop over the bytes, no recursion (a body cannot exhaust a stack here); UTF-8 keeps
 * every byte of a multi-byte character above 0x7f, so brackets and quotes are found byte by byte.
 */
export function checkJsonDepth(buf: Uint8Array, maxDepth: number): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i]!;
    if (inString) {
      if (b === 0x5c) i++; // backslash: skip the escaped byte
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > maxDepth) throw new JsonTooDeep(maxDepth);
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
}

/** Parses `req.body` with `schema`; throws SLUICE_ERR_INVALID_REQUEST (400) whose details are every zod issue. */
export function parseBody<S extends z.ZodType>(schema: S, req: Request): z.infer<S> {
  const parsed = schema.safeParse(req.body);
  if (parsed.success) return parsed.data;
  const issues = issuesOf(parsed.error);
  throw new SluiceError('SLUICE_ERR_INVALID_REQUEST', `invalid request body: ${describeIssues(issues)}`, { details: issues });
}
