// GET /v1/openapi.json — the OpenAPI 3.1 document of every route, made once per process.
import { Router, type Request, type Response } from 'express';
import { openApiDocument } from './document.js';

export function openApiRoute(): Router {
  const router = Router();
  let doc: unknown;
  router.get('/v1/openapi.json', (_req: Request, res: Response) => {
    doc ??= openApiDocument();
    res.json(doc);
  });
  return router;
}
