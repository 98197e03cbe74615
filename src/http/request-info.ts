// The plain view of an express request that rules and identity sources read.
import type { Request } from 'express';
import type { RequestInfo } from '../request/request-info.js';

export function requestInfo(req: Request): RequestInfo {
  return {
    method: req.method,
    path: req.originalUrl,
    headers: req.headers,
    socketAddress: req.socket.remoteAddress,
    user: (req as Request & { user?: unknown }).user,
  };
}
