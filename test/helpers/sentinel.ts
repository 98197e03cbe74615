// Test helper: a Sentinel-managed Redis — one master, one replica and three `redis-server --sentinel`
// processes on free ports — with the means to kill the master and wait for a replica's promotion.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, startRedis, type RedisServer } from './redis-server.js';

const run = promisify(execFile);
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export const MASTER_NAME = 'sluicemaster';

export interface SentinelSet {
  /** `redis-sentinel://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3/sluicemaster` */
  readonly url: string;
  readonly sentinelPorts: number[];
  /** Both data nodes; which one is master changes with failovers. */
  readonly data: RedisServer[];
  /** The port the Sentinels name as master now. */
  masterPort(): Promise<number>;
  /** SIGKILLs the data node that is master now; resolves with its port. */
  killMaster(): Promise<number>;
  /** Resolves with the new master's port once the Sentinels name a master other than `oldPort`. */
  waitForPromotion(oldPort: number, timeoutMs?: number): Promise<number>;
  dispose(): Promise<void>;
}

async function cli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run('redis-cli', ['-p', String(port), ...args], { timeout: 2_000 });
  return stdout.trim();
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts master + replica + 3 Sentinels (quorum 2, master down after `downAfterMs`) and waits until
 * every Sentinel knows the replica and the two other Sentinels, so a failover can happen at once.
 */
export async function startSentinelSet(downAfterMs = 1_000): Promise<SentinelSet> {
  const master = await startRedis();
  const replica = await startRedis(['--replicaof', '127.0.0.1', String(master.port)]);
  const data = [master, replica];
  const dir = mkdtempSync(join(tmpdir(), 'sluice-sentinel-'));
  const sentinelPorts: number[] = [];
  const sentinels: ChildProcess[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const conf = join(dir, `sentinel-${port}.conf`);
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${MASTER_NAME} 127.0.0.1 ${master.port} 2`,
        `sentinel down-after-milliseconds ${MASTER_NAME} ${downAfterMs}`,
        `sentinel failover-timeout ${MASTER_NAME} 10000`,
        `sentinel parallel-syncs ${MASTER_NAME} 1`,
        '',
      ].join('\n'),
    );
    const child = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
    live.add(child);
    sentinels.push(child);
    sentinelPorts.push(port);
  }
  const set: SentinelSet = {
    url: `redis-sentinel://${sentinelPorts.map((p) => `127.0.0.1:${p}`).join(',')}/${MASTER_NAME}`,
    sentinelPorts,
    data,
    async masterPort() {
      const out = await cli(sentinelPorts[0]!, 'SENTINEL', 'get-master-addr-by-name', MASTER_NAME);
      return Number(out.split('\n')[1]);
    },
    async killMaster() {
      const port = await set.masterPort();
      const node = data.find((d) => d.port === port);
      if (!node) throw new Error(`no data node on the master port ${port}`);
      await node.kill();
      return port;
    },
    async waitForPromotion(oldPort, timeoutMs = 30_000) {
      let now = oldPort;
      await waitFor(
        async () => {
          const ports = await Promise.all(sentinelPorts.map((p) => cli(p, 'SENTINEL', 'get-master-addr-by-name', MASTER_NAME).then((o) => Number(o.split('\n')[1]))));
          now = ports[0]!;
          return ports.every((p) => p === now && p !== oldPort);
        },
        'a promotion',
        timeoutMs,
      );
      return now;
    },
    async dispose() {
      await Promise.all(
        sentinels.map((c) => {
          if (c.exitCode !== null || c.signalCode !== null) return undefined;
          const exited = new Promise((r) => c.once('exit', r));
          c.kill('SIGKILL');
          return exited;
        }),
      );
      await Promise.all(data.map((d) => d.dispose()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await waitFor(async () => (await cli(replica.port, 'INFO', 'replication')).includes('master_link_status:up'), 'the replica to sync');
    for (const port of sentinelPorts) {
      await waitFor(async () => {
        const info = (await cli(port, 'SENTINEL', 'master', MASTER_NAME)).split('\n');
        const field = (name: string) => Number(info[info.indexOf(name) + 1]);
        return field('num-slaves') === 1 && field('num-other-sentinels') === 2;
      }, `Sentinel ${port} to know the replica and the other Sentinels`);
    }
  } catch (error) {
    await set.dispose();
    throw error;
  }
  return set;
}
