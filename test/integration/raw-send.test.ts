// The RESP text src/redis/raw-send.ts builds is the command ioredis would send: keys and arguments
// arrive in Redis byte for byte (multi-byte UTF-8 and empty strings included, numbers as their
// decimal text), EVAL and EVALSHA alike, and a NOSCRIPT error comes back as ioredis reports it.
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeArgs, bulk, sendEncoded, sendScriptRaw, sendsRaw } from '../../src/redis/raw-send.js';
import { startRedis, type RedisServer } from '../helpers/redis-server.js';

const ECHO = 'local out = {} for i = 1, #KEYS do out[#out + 1] = KEYS[i] end out[#out + 1] = "|" for i = 1, #ARGV do out[#out + 1] = ARGV[i] end return out';

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis(server.url);
});
afterAll(async () => {
  client.disconnect();
  await server.dispose();
});

describe('raw script send', () => {
  it('sends keys and arguments byte for byte, as ioredis would', async () => {
    const keys = ['k:1', 'ключ:é', ''];
    const args = ['a', '', 'ü€𝄞', 42, 1.5, '-7'];
    const want = await client.eval(ECHO, keys.length, ...keys, ...args);
    expect(want).toEqual([...keys, '|', 'a', '', 'ü€𝄞', '42', '1.5', '-7']);
    expect(await sendScriptRaw(client, 'eval', ECHO, keys, args)).toEqual(want);
    const sha = createHash('sha1').update(ECHO).digest('hex');
    expect(await sendScriptRaw(client, 'evalsha', sha, keys, args)).toEqual(want);
    // Encoded in parts (a batch's keys and arguments made straight from its calls).
    expect(await sendEncoded(client, 'evalsha', sha, keys.length, keys.map(bulk).join(''), args.length, encodeArgs(bulk('a'), args.slice(1)))).toEqual(want);
  });

  it('reports NOSCRIPT as an error, so the caller can send EVAL', async () => {
    await expect(sendScriptRaw(client, 'evalsha', 'f'.repeat(40), [], [])).rejects.toThrow(/^NOSCRIPT/);
  });

  it('is not used on a client with a key prefix', () => {
    const prefixed = new Redis(server.url, { keyPrefix: 'p:', lazyConnect: true });
    expect(sendsRaw(prefixed)).toBe(false);
    expect(sendsRaw(client)).toBe(true);
    prefixed.disconnect();
  });
});
