// `sluice simulate --redis URL`: the same replay through the real Lua scripts on a private Redis
// gives the same decisions, and hence the same output, as the reference models.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferIo } from '../../../src/cli/io.js';
import { runCli } from '../../../src/cli/program.js';
import { startRedis, type RedisServer } from '../../helpers/redis-server.js';

async function cli(...args: string[]) {
  const io = bufferIo();
  const code = await runCli(args, io);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

const F1 = '0.2,0.4,0.9,58.6,59.8,59.9,60.1,60.4,60.7,61.2';

describe('sluice simulate --redis', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await server?.dispose();
  });

  it('F1 through fixed window and sliding log on Redis prints what the models print, and leaves no keys', async () => {
    const args = ['simulate', '--limit', '5', '--window', '60s', '--compare', 'fixed-window,sliding-log,sliding-counter,token-bucket,leaky-bucket', '--times', F1];
    const models = await cli(...args);
    const redis = await cli(...args, '--redis', server.url);
    expect(redis.stderr).toBe('');
    expect(redis.code).toBe(0);
    expect(redis.stdout).toBe(models.stdout);
    expect(redis.stdout).toContain(' 7  60.100  allow   4 left        REJECT  retry 0.100s');
    const raw = new Redis(server.port, '127.0.0.1');
    try {
      expect(await raw.dbsize()).toBe(0);
    } finally {
      raw.disconnect();
    }
  });

  it('--json decisions are identical, weighted costs included', async () => {
    const args = ['simulate', '--algorithm', 'sliding-log', '--limit', '6', '--window', '10s', '--cost', '2', '--times', '0,1,2,3,10.5,11', '--json'];
    const models = JSON.parse((await cli(...args)).stdout) as unknown;
    const redis = JSON.parse((await cli(...args, '--redis', server.url)).stdout) as unknown;
    expect(redis).toEqual(models);
  });

  it('an unreachable Redis is an error, not a hang', async () => {
    const r = await cli('simulate', '-a', 'fixed-window', '--limit', '1', '--window', '1s', '--times', '0', '--redis', 'redis://127.0.0.1:1');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('simulate: Redis at redis://127.0.0.1:1 did not answer');
  }, 30_000);
});
