// One-key decisions on a cluster, batched per master instead of sent one by one. A batch on one node
// batches decisions whose keys lie in any slots, which a cluster refuses for declared keys (CROSSSLOT):
// so the cluster form of a decision script declares no keys, takes each decision's key in ARGV, and is
// sent straight to the master that serves those keys (by the client's slot map). Redis lets a script
// with `allow-cross-slot-keys` (an EVAL without a shebang too) touch keys of several slots as long as
// this node serves them; a key it does not serve (the map was stale: a slot moved, or is migrating and
// the key is already gone) fails that decision's first command, before it wrote anything. The batch
// then answers that decision ELSEWHERE and the registry sends it alone, by the cluster client, which
// follows the redirection (docs/decisions/cluster-node-batches.md).
import type { Cluster, Redis } from 'ioredis';
import { inPlaceDecision, resolveNamedIncludes } from './lua-includes.js';
import type { ScriptParts } from './lua-functions.js';

/** A node batch's reply for a decision whose key this node does not serve: it did not run here. */
export const ELSEWHERE = 'sluice:elsewhere';

/**
 * The Lua lines that settle call i after `local ok, reply<, ...> = pcall(...)`: its reply when it ran;
 * else, when `key` (its first key) is not served here, ELSEWHERE; else the batch ends with its error.
 * `onReply`: the lines for a call that ran.
 */
function settleCall(key: string, onReply: readonly string[]): string[] {
  return [
    '  if ok then',
    ...onReply.map((l) => `    ${l}`),
    `  elseif pcall(redis.call, 'EXISTS', ${key}) then`,
    '    error(reply)',
    '  else',
    `    replies[i] = '${ELSEWHERE}'`,
    '  end',
  ];
}

/**
 * The cluster form of a one-key decision script: no KEYS; ARGV[1] = arguments per decision, then for
 * each decision its key and its arguments. Each decision runs as the script would, in order, and sees
 * what the ones before it left. One that fails is asked whether its key is served here at all (an
 * EXISTS, which fails exactly when it is not): if not, its reply is ELSEWHERE and the batch goes on;
 * any other failure ends the batch with its error, as a batch on one node does. Structure, not error
 * text, tells the two apart.
 */
export function nodeBatchedLua(name: string, source: string, read: (name: string) => string): ScriptParts {
  // Each decision calls its include's decide function where its key and arguments lie in ARGV
  // (src/redis/lua-includes.ts inPlaceDecision).
  const entry = inPlaceDecision(name, source);
  return {
    includes: resolveNamedIncludes(source, read),
    body: [
      'local per_call = tonumber(ARGV[1])',
      'local replies = {}',
      'local i, base = 0, 1',
      'while base < #ARGV do',
      '  i = i + 1',
      '  local key = ARGV[base + 1]',
      `  local ok, reply = pcall(${entry}, key, ARGV, base + 1, ARGV[base + 6] == '1')`,
      ...settleCall('key', ['replies[i] = reply']),
      '  base = base + per_call + 1',
      'end',
      'return replies',
    ].join('\n'),
  };
}

/**
 * The cluster form of a many-key script decided in place (`entry(KEYS, ARGV, keyOffset, argOffset,
 * keyCount)`, returning its reply and the offset of its last argument, or an error reply alone: the
 * `limits` script's all-or-nothing decision of one request): no KEYS; ARGV[1] = m calls, then for each
 * call its key count, its argument count, its keys and its arguments. A call's keys share a slot (the
 * all-or-nothing path takes one call only then), so its first command touches them all or none: a call
 * that fails where its first key is not served is answered ELSEWHERE, as a one-key decision is; an
 * error reply from the entry, or any other failure, ends the batch with it, as the batched form on one
 * node does.
 */
export function nodeBatchedManyLua(entry: string, source: string, read: (name: string) => string): ScriptParts {
  return {
    includes: resolveNamedIncludes(source, read),
    body: [
      'local m = tonumber(ARGV[1])',
      'local replies = {}',
      'local at = 1',
      'for i = 1, m do',
      '  local nk, na = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2])',
      '  local keys = {}',
      '  for j = 1, nk do keys[j] = ARGV[at + 2 + j] end',
      '  local a0 = at + 2 + nk',
      `  local ok, reply, last = pcall(${entry}, keys, ARGV, 0, a0, nk)`,
      ...settleCall('keys[1]', ['if not last then return reply end', 'replies[i] = reply']),
      '  at = a0 + na',
      'end',
      'return replies',
    ].join('\n'),
  };
}

/** Whether `cluster`'s decisions can go in node batches: keys reach Redis as given (no ioredis keyPrefix, which ARGV would not get). */
export function batchesByNode(cluster: Cluster): boolean {
  return !cluster.options.keyPrefix && !cluster.options.redisOptions?.keyPrefix;
}

/** The ready connection of master `node` ("host:port", as the cluster's slot map names it), if there is one. */
export function masterConnection(cluster: Cluster, node: string): Redis | undefined {
  for (const r of cluster.nodes('master')) {
    if (`${r.options.host}:${r.options.port}` === node) return r.status === 'ready' ? r : undefined;
  }
  return undefined;
}
