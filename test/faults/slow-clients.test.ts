// Fault family "slow clients": 200 slowloris connections (a request head dribbled one header line at
// a time) and slow bodies against `sluice serve` with its slow-client limits set; other clients must
// go on being served, and the server must close every slow connection at its limit.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson, startSluice, stopAll, tempDir, type SluiceProcess, type TempDir } from '../helpers/e2e.js';
import { quantile, reportFigure } from '../helpers/figures.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';

const HEADERS_TIMEOUT_MS = 2_000;
const REQUEST_TIMEOUT_MS = 3_000;
const SLOWLORIS = 200;
const RULES = `auth: none
domains:
  - domain: api
    descriptors:
      - key: ip
        policy: { algorithm: sliding-log, limit: 100000, window: 1h }
`;

let redis: RedisServer;
let dir: TempDir;
let serve: SluiceProcess;

beforeAll(async () => {
  redis = await startRedis();
  dir = tempDir('slow');
  serve = await startSluice('serve', {
    config: dir.write('rules.yaml', RULES),
    redisUrl: redis.url,
    args: ['--headers-timeout', String(HEADERS_TIMEOUT_MS), '--request-timeout', String(REQUEST_TIMEOUT_MS), '--keep-alive-timeout', '1000'],
    readyTimeoutMs: 60_000,
  });
});

afterAll(async () => {
  await stopAll(serve);
  await redis?.dispose();
  dir?.dispose();
});

interface Slow {
  socket: Socket;
  openedAt: number;
  closedAt?: number;
  reply: string;
}

/** Opens a connection that sends `first`, then `drip` every `everyMs`, until the server closes it. */
function slowConnection(port: number, first: string, drip: string, everyMs: number): Promise<Slow> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const slow: Slow = { socket, openedAt: 0, reply: '' };
    let timer: NodeJS.Timeout | undefined;
    socket.once('connect', () => {
      slow.openedAt = performance.now();
      socket.write(first);
      timer = setInterval(() => socket.writable && socket.write(drip), everyMs);
      resolve(slow);
    });
    socket.on('data', (d) => (slow.reply += d.toString()));
    socket.once('error', (e) => (slow.openedAt ? undefined : reject(e)));
    socket.once('close', () => {
      clearInterval(timer);
      slow.closedAt = performance.now();
    });
  });
}

describe('slow clients', () => {
  it('200 slowloris connections do not stop other clients being served; each is closed at the headers timeout', async () => {
    const port = Number(new URL(serve.url).port);
    const slow = await Promise.all(
      Array.from({ length: SLOWLORIS }, (_, i) => slowConnection(port, `GET /healthz HTTP/1.1\r\nHost: x\r\n`, `X-Slow-${i}: a\r\n`, 400)),
    );
    // A slow body: the head arrives at once, the body a byte at a time.
    const slowBodies = await Promise.all(
      Array.from({ length: 20 }, () =>
        slowConnection(port, `POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`, ' ', 400),
      ),
    );

    // Meanwhile, other clients: decisions and health checks, each on its own connection.
    const latencies: number[] = [];
    const statuses: number[] = [];
    // Until the slow connections are past their limit, and at least 5 rounds (a loaded machine is slow).
    const until = performance.now() + HEADERS_TIMEOUT_MS + 2_000;
    while (performance.now() < until || latencies.length < 5) {
      const t = performance.now();
      const [a, b] = await Promise.all([
        fetch(`${serve.url}/healthz`, { headers: { connection: 'close' } }),
        postJson(`${serve.url}/v1/decisions`, { domain: 'api', descriptors: [{ key: 'ip', value: '1.2.3.4' }] }, { connection: 'close' }),
      ]);
      await Promise.all([a.arrayBuffer(), b.arrayBuffer()]);
      statuses.push(a.status, b.status);
      latencies.push(performance.now() - t);
      await new Promise((r) => setTimeout(r, 50));
    }
    // Every slow connection is closed by the server (give the 1/4-limit checking interval and a busy machine room).
    const deadline = performance.now() + 10_000;
    while ([...slow, ...slowBodies].some((s) => s.closedAt === undefined) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const lived = slow.map((s) => (s.closedAt ?? Number.NaN) - s.openedAt);
    const bodyLived = slowBodies.map((s) => (s.closedAt ?? Number.NaN) - s.openedAt);
    for (const s of [...slow, ...slowBodies]) s.socket.destroy();

    const figure = {
      headersTimeoutMs: HEADERS_TIMEOUT_MS,
      requestTimeoutMs: REQUEST_TIMEOUT_MS,
      slowloris: SLOWLORIS,
      slowlorisClosed: slow.filter((s) => s.closedAt !== undefined).length,
      slowlorisLivedMs: { min: Math.round(Math.min(...lived)), median: Math.round(quantile(lived, 0.5)), max: Math.round(Math.max(...lived)) },
      slowlorisAnswered408: slow.filter((s) => s.reply.startsWith('HTTP/1.1 408')).length,
      slowBodies: slowBodies.length,
      slowBodiesClosed: slowBodies.filter((s) => s.closedAt !== undefined).length,
      slowBodiesLivedMs: { min: Math.round(Math.min(...bodyLived)), max: Math.round(Math.max(...bodyLived)) },
      otherRequests: statuses.length,
      otherServed200: statuses.filter((s) => s === 200).length,
      otherLatencyMs: { p50: Math.round(quantile(latencies, 0.5)), p99: Math.round(quantile(latencies, 0.99)), max: Math.round(Math.max(...latencies)) },
    };
    reportFigure('slow-clients', figure);

    expect(figure.otherRequests).toBeGreaterThanOrEqual(10); // 5 rounds of 2
    expect(figure.otherServed200).toBe(figure.otherRequests);
    expect(figure.slowlorisClosed).toBe(SLOWLORIS);
    expect(figure.slowBodiesClosed).toBe(slowBodies.length);
    // Closed at the limit, not before it (a dripping client is not cut off early) and not much after.
    expect(figure.slowlorisLivedMs.min).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
    expect(figure.slowlorisLivedMs.max).toBeLessThan(HEADERS_TIMEOUT_MS + 5_000);
    expect(figure.slowBodiesLivedMs.min).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(figure.slowBodiesLivedMs.max).toBeLessThan(REQUEST_TIMEOUT_MS + 5_000);
    expect(serve.child.exitCode).toBeNull();
  }, 60_000);
});
