// Test helpers: real redis-server processes on free ports (a single node, or a 3-master cluster),
// started and stopped by the tests themselves so they never touch a shared server or each other.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** A port nobody listens on now, with port + 10000 (the cluster bus) free too. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    if ((await isFree(port)) && (await isFree(port + 10_000))) return port;
  }
  throw new Error('no free port found');
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

async function ping(port: number): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), 'ping'], { timeout: 2_000 });
  return stdout.trim();
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A check that says waiting is pointless (ExitedBeforeReady) ends the wait; other failures are "not yet".
    if (
      await check().catch((error: unknown) => {
        if (error instanceof ExitedBeforeReady) throw error;
        return false;
      })
    )
      return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Kills the server (SIGKILL: no shutdown work, as a crash) and waits for it to exit. */
  kill(): Promise<void>;
  /** Starts it again on the same port (after stop), empty. */
  start(): Promise<void>;
  /** stop() and remove its files. */
  dispose(): Promise<void>;
}

/** The server exited before it answered: most likely another process took its port after freePort() saw it free. */
class ExitedBeforeReady extends Error {}

/**
 * Starts `redis-server` on a free port with nothing persisted. A port is free when chosen, but another
 * test process may bind it before this server does (the server then exits at once): it is tried again
 * on another port, up to 5 times.
 */
export async function startRedis(extraArgs: string[] = []): Promise<RedisServer> {
  for (let attempt = 1; ; attempt++) {
    const server = redisOn(await freePort(), extraArgs);
    try {
      await server.start();
      return server;
    } catch (error) {
      await server.dispose().catch(() => undefined);
      if (!(error instanceof ExitedBeforeReady) || attempt >= 5) throw error;
    }
  }
}

function redisOn(port: number, extraArgs: string[]): RedisServer {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-redis-'));
  let child: ChildProcess | undefined;
  const end = async (signal: NodeJS.Signals) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(signal);
    await exited;
    children.delete(c);
  };
  const server: RedisServer = {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs],
        { stdio: 'ignore' },
      );
      children.add(child);
      const started = child;
      await waitFor(async () => {
        if (started.exitCode !== null || started.signalCode !== null) throw new ExitedBeforeReady(`redis-server on ${port} exited before it answered`);
        return (await ping(port)) === 'PONG';
      }, `redis-server on ${port}`);
    },
    async stop() {
      await end('SIGTERM');
    },
    async kill() {
      await end('SIGKILL');
    },
    async dispose() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

export interface RedisCluster {
  readonly nodes: { host: string; port: number }[];
  /** The masters' servers, in `nodes` order: kill() one, start() it again (it rejoins from its nodes.conf, empty). */
  readonly servers: RedisServer[];
  dispose(): Promise<void>;
}

/** Starts a real 3-master Redis Cluster (no replicas) on free ports and waits for cluster_state:ok. */
export async function startCluster(masters = 3): Promise<RedisCluster> {
  const servers: RedisServer[] = [];
  try {
    for (let i = 0; i < masters; i++) {
      servers.push(await startRedis(['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '3000']));
    }
    await run(
      'redis-cli',
      ['--cluster', 'create', ...servers.map((s) => `127.0.0.1:${s.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: 30_000 },
    );
    for (const s of servers) {
      await waitFor(async () => {
        const { stdout } = await run('redis-cli', ['-p', String(s.port), 'cluster', 'info'], { timeout: 2_000 });
        return stdout.includes('cluster_state:ok');
      }, `cluster state ok on ${s.port}`);
    }
  } catch (e) {
    await Promise.all(servers.map((s) => s.dispose()));
    throw e;
  }
  return {
    nodes: servers.map((s) => ({ host: '127.0.0.1', port: s.port })),
    servers,
    dispose: async () => {
      await Promise.all(servers.map((s) => s.dispose()));
    },
  };
}
