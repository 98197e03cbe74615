// `sluice dev` convenience: when nothing answers at a local Redis URL and redis-server is installed,
// start one (nothing persisted) for the life of this process.
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';

/** True when a Redis answers PING at host:port within `timeoutMs`. */
export function pingRedis(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

/** Starts redis-server on a loopback URL's port when none answers; returns the child (or undefined). */
export async function ensureLocalRedis(url: string, log: (msg: string) => void): Promise<ChildProcess | undefined> {
  // A cluster or a Sentinel-managed master is never started for you.
  if (url.startsWith('redis-cluster://') || url.startsWith('redis-sentinel://')) return undefined;
  const u = new URL(url);
  const host = u.hostname || '127.0.0.1';
  const port = Number(u.port || 6379);
  if (await pingRedis(host, port)) return undefined;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) {
    throw new Error(`no Redis answers at ${url}, and it is not local: start it, or pass --redis-url`);
  }
  log(`no Redis at ${url}: starting redis-server on port ${port}`);
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const failed = new Promise<never>((_, reject) =>
    child.once('error', (e) => reject(new Error(`could not start redis-server (${e.message}); install it (apt-get install redis-server) or pass --redis-url`))),
  );
  process.once('exit', () => child.kill());
  for (let i = 0; i < 50; i++) {
    const up = await Promise.race([pingRedis(host, port, 200), failed]);
    if (up) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error('redis-server did not start within 5 s');
}
