// One script call written as RESP text built here, in one pass, on a single-node client. ioredis's
// own path copies a command's arguments three times (the caller's spread, `args.flat()`, a
// stringify loop) and then builds the same text argument by argument: for a batch of `limits` calls
// (~600 arguments, 20-30 requests) that was ~5 µs of the server's CPU per HTTP request. The command
// still goes through `sendCommand` (the offline queue, the reply queue, the command timeout), only
// its text is given.
import { Command, type Redis } from 'ioredis';
import type { ScriptArg } from './script-table.js';

/** A command whose wire text is given: ioredis writes `text` as it is. */
class RawCommand extends Command {
  constructor(
    name: string,
    private readonly text: string,
  ) {
    super(name, [], { replyEncoding: 'utf8' });
  }

  override toWritable(): string {
    return this.text;
  }
}

/** `value` as one RESP bulk string. */
export function bulk(value: string): string {
  return `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
}

/**
 * True when a single-node client (a cluster's redirections and slots read the arguments: never
 * raw) can take a RawCommand: without a key prefix (ioredis would prefix the keys it parses out of
 * the arguments, which a RawCommand does not have).
 */
export function sendsRaw(client: Redis): boolean {
  return !client.options.keyPrefix;
}

/**
 * FCALL, EVALSHA or EVAL `first` with `keys` then `args`, as RESP text made in one pass: the same bytes
 * ioredis would write for `client[cmd](first, keys.length, ...keys, ...args)`.
 */
export function sendScriptRaw(client: Redis, cmd: 'fcall' | 'evalsha' | 'eval', first: string, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
  let keysText = '';
  for (let i = 0; i < keys.length; i++) keysText += bulk(keys[i]!);
  return sendEncoded(client, cmd, first, keys.length, keysText, args.length, encodeArgs('', args));
}

/** `text` with each of `args` appended as a RESP bulk string. */
export function encodeArgs(text: string, args: readonly ScriptArg[]): string {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    text += bulk(typeof a === 'string' ? a : String(a));
  }
  return text;
}

/** FCALL, EVALSHA or EVAL `first` with `keyCount` keys and `argCount` arguments already encoded (`bulk`, in order). */
export function sendEncoded(client: Redis, cmd: 'fcall' | 'evalsha' | 'eval', first: string, keyCount: number, keysText: string, argCount: number, argsText: string): Promise<unknown> {
  const text = `*${3 + keyCount + argCount}\r\n${bulk(cmd)}${bulk(first)}${bulk(String(keyCount))}${keysText}${argsText}`;
  return client.sendCommand(new RawCommand(cmd, text)) as Promise<unknown>;
}
