// A private redis-server run under valgrind's callgrind, for benches that count the instructions Redis
// runs for some work (a count the machine's load does not move): read the live counter before and after.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from '../../test/helpers/redis-server.js';

export interface CallgrindRedis {
  port: number;
  url: string;
  /** A connection, ready. */
  client: Redis;
  /** Instructions the server has run so far (callgrind's live counter, summed over its threads). */
  instructions(): number;
  dispose(): Promise<void>;
}

/** Starts redis-server under callgrind on a free port and waits (up to 60 s) until it answers. Needs valgrind. */
export async function startCallgrindRedis(): Promise<CallgrindRedis> {
  const work = mkdtempSync(join(tmpdir(), 'sluice-cg-'));
  const port = await freePort();
  const server = spawn('valgrind', ['--tool=callgrind', `--callgrind-out-file=${join(work, 'cg.out')}`, '-q', 'redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const client = new Redis(port, '127.0.0.1', { retryStrategy: () => 100 });
  client.on('error', () => undefined); // refused until valgrind's redis-server listens
  const dispose = async () => {
    client.disconnect();
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    rmSync(work, { recursive: true, force: true });
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('redis-server under callgrind did not start in 60 s')), 60_000);
      client.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  } catch (error) {
    await dispose();
    throw error;
  }
  const instructions = () => {
    const out = execFileSync('callgrind_control', ['-e', 'Ir', String(server.pid)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    // One line per thread under "Totals:", `Th <i>  <count>`: summed.
    const threads = [...out.matchAll(/^\s*Th \d+\s+([\d,]+)\s*$/gm)].map((m) => Number(m[1]!.replace(/,/g, '')));
    if (threads.length === 0) throw new Error(`callgrind_control gave no Ir count:\n${out}`);
    return threads.reduce((a, b) => a + b, 0);
  };
  return { port, url: `redis://127.0.0.1:${port}`, client, instructions, dispose };
}
