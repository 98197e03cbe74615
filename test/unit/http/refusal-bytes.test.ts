// The refusal written in one writeHead (sendRefusalWith, when no header was set before it) sends the
// very bytes the header-by-header path (setHeader for each, then sendRefusalBody) sends; with a header
// another middleware set first, it keeps that header in its place, as setting each would.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import type { Response } from 'express';
import { afterAll, describe, expect, it } from 'vitest';
import { sendRefusalBody, sendRefusalWith } from '../../../src/http/refusal.js';

type Handler = (res: Response) => void;

const servers: ReturnType<typeof createServer>[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});

/** The raw bytes of one response of `handler`, its Date header blanked (the only varying field). */
async function rawResponse(handler: Handler): Promise<string> {
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => handler(res as unknown as Response));
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await once(socket, 'connect');
  socket.end('GET /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n');
  let raw = '';
  socket.setEncoding('latin1');
  socket.on('data', (d: string) => (raw += d));
  await once(socket, 'close');
  return raw.replace(/\r\nDate: [^\r]*/, '\r\nDate: -');
}

const HEADERS = ['Retry-After', '7', 'RateLimit-Policy', '"r";q=100;w=600', 'RateLimit', '"r";r=0;t=7', 'X-RateLimit-Limit', '100', 'X-RateLimit-Remaining', '0', 'X-RateLimit-Reset', '7'];
const MESSAGE = 'rate limit exceeded (r); retry in 7 s';

function oneByOne(res: Response, reason?: string): void {
  for (let i = 0; i < HEADERS.length; i += 2) res.setHeader(HEADERS[i]!, HEADERS[i + 1]!);
  sendRefusalBody(res, 7, reason, MESSAGE);
}

describe('sendRefusalWith', () => {
  it('sends the bytes of the header-by-header path when no header was set before', async () => {
    const before = await rawResponse((res) => oneByOne(res));
    const direct = await rawResponse((res) => sendRefusalWith(res, [...HEADERS], 7, undefined, MESSAGE));
    expect(direct).toBe(before);
    expect(direct).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\nRetry-After: 7\r\n/);
    expect(direct).toMatch(/\r\n\r\n\{"error":"rate_limit_exceeded","retry_after":7,"message":"rate limit exceeded \(r\); retry in 7 s"\}$/);
    // The body is made once per message: a second refusal sends the same bytes.
    expect(await rawResponse((res) => sendRefusalWith(res, [...HEADERS], 7, undefined, MESSAGE))).toBe(before);
  });

  it('keeps the place of a header set before it (and its own value of a header it also sends)', async () => {
    const first = (res: Response) => {
      res.setHeader('X-Powered-By', 'Express');
      res.setHeader('X-RateLimit-Limit', 'set-before');
    };
    const before = await rawResponse((res) => {
      first(res);
      oneByOne(res, 'queue_full');
    });
    const direct = await rawResponse((res) => {
      first(res);
      sendRefusalWith(res, [...HEADERS], 7, 'queue_full', MESSAGE);
    });
    expect(direct).toBe(before);
    expect(direct).toMatch(/^HTTP\/1\.1 429 Too Many Requests\r\nX-Powered-By: Express\r\nX-RateLimit-Limit: 100\r\nRetry-After: 7\r\n/);
    expect(direct).toContain('"reason":"queue_full"');
  });
});
