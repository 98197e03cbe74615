// The script registry: the scripts of lua/ (read once, with their batched forms: src/redis/script-forms.ts)
// run by EVALSHA of their content hash; a NOSCRIPT reply (Redis restarted, SCRIPT FLUSH) is answered by
// sending the same call once as EVAL, which loads it: one extra round trip, never a failed decision. Not ioredis defineCommand: every defined command
// costs every ioredis (auto-)pipeline a copy of itself (docs/decisions/registry-without-definecommand.md).
import { SluiceError } from '../errors.js';
import calculateSlot from 'cluster-key-slot';
import { Cluster, ReplyError, type Redis } from 'ioredis';
import { malformedReply } from './reply.js';
import { sendWhilePending } from './cluster-send.js';
import { bulk, encodeArgs, sendEncoded, sendScriptRaw, sendsRaw } from './raw-send.js';
import type { RedisClient } from './connection.js';
import { ELSEWHERE, batchesByNode, masterConnection } from './node-batch.js';
import { SCRIPT_NAMES, argvOf, batchSharing, countText, keysOf, type BatchSharing, type BatchedScript, type ScriptArg, type ScriptArgv, type ScriptKeys, type ScriptName } from './script-table.js';
import { BATCHED_SCRIPTS, MANY_KEY_BATCHED, batchName, countsArguments, loadScripts, nodeBatchName, type LoadedScript } from './script-forms.js';

export { SCRIPT_NAMES, type ScriptArg, type ScriptName } from './script-table.js';

const NO_KEYS: readonly string[] = [];

/**
 * The most decisions one batched call carries. Redis runs them back to back, so a batch blocks other
 * clients for about MAX_BATCH x 5 µs; 8 to 64 measured alike in throughput, 32 and 64 cost the least CPU.
 */
export const MAX_BATCH = 32;

const NO_ARGS: readonly ScriptArg[] = [];
/** How a script is called: by its function once its library is loaded, else by its hash, else by its text. */
type ScriptCommand = 'fcall' | 'evalsha' | 'eval';
const always = () => true;

/**
 * Whether `c` (a call of an IN_PLACE_ENTRY script) may be sent without arguments, reusing `prev`'s:
 * the same arguments, value for value. Only the previous call's: a comparison per argument, no index.
 */
export function repeatsArgs(prev: ManyKeyCall, c: ManyKeyCall): boolean {
  const a = prev.args;
  const b = c.args;
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Whether `c` may be sent sharing `prev`'s batchShared keys and arguments (both full length, same values there). */
function sharesWith(sharing: BatchSharing, prev: ManyKeyCall, c: ManyKeyCall): boolean {
  if (c.keys.length !== sharing.keyCount || c.args.length !== sharing.argCount) return false;
  if (prev.keys.length !== sharing.keyCount || prev.args.length !== sharing.argCount) return false;
  for (const p of sharing.sharedKeys) if (c.keys[p - 1] !== prev.keys[p - 1]) return false;
  for (const p of sharing.sharedArgs) if (c.args[p - 1] !== prev.args[p - 1]) return false;
  return true;
}

/** One decision waiting to be sent, alone or with others of the same script. */
export interface BatchableCall {
  readonly key: string;
  /** ARGV in the script's order, built by name from the script table (src/limiters/decision-args.ts). */
  readonly args: readonly ScriptArg[];
  onReply(reply: unknown): void;
  onError(error: unknown): void;
  /** False once the caller has been answered (its deadline passed): the call must not be sent again. */
  readonly pending?: boolean;
}

/** One call of a many-key script waiting to be sent, alone or with others of the same script. */
export interface ManyKeyCall {
  readonly keys: readonly string[];
  readonly args: readonly ScriptArg[];
  onReply(reply: unknown): void;
  onError(error: unknown): void;
  /** False once the caller has been answered: the call must not be sent again. */
  readonly pending: boolean;
}

/**
 * Only "Redis does not have this script" is ever matched by error text (style.md): NOSCRIPT for
 * EVALSHA, "ERR Function not found" for FCALL (a Redis restarted without persistence, FUNCTION FLUSH, a
 * master added to a cluster). Either way the script did not run.
 */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
function isFunctionNotFound(error: unknown): boolean {
  return error instanceof Error && error.message === 'ERR Function not found';
}
/**
 * Redis at its maxmemory refuses an FCALL of a write function before running it (OOM), where an EVAL
 * without a shebang runs and only its first memory-taking write fails: a script that frees memory first
 * (the sliding log's trim) goes on deciding at the ceiling (docs/operations.md#memory). So an FCALL
 * refused with OOM, which did not run, is sent again by EVALSHA: the same behaviour as before functions.
 */
function isOutOfMemory(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('OOM ');
}

/** An error that is not Redis's answer (the connection failed, the command was never written). */
function isConnectionError(error: unknown): boolean {
  return !(error instanceof ReplyError) && !(error instanceof SluiceError);
}

/** After a refused FUNCTION LOAD (Redis before 7, an ACL without it), the libraries are not tried again for this long. */
const LIBRARY_RETRY_MS = 30_000;
/** What `loadLibrary` answers when it does not try. */
const NOT_LOADED: Promise<boolean> = Promise.resolve(false);

/** Runs the lua/ scripts on one client. Typed wrappers are its only callers. */
export class ScriptRegistry {
  private readonly scripts = new Map<string, LoadedScript>();
  /** Calls waiting for the end of this turn of the event loop, per batched script. */
  private readonly queues = new Map<string, BatchableCall[]>();
  /** The same for the many-key scripts. */
  private readonly manyQueues = new Map<string, ManyKeyCall[]>();
  /** The many-key scripts whose batches share keys and arguments between calls (script-table batchShared). */
  private readonly sharing = new Map<string, BatchSharing>();
  /** Scripts loaded (or being loaded) ahead of their first call by `load`. */
  private readonly preloaded = new Map<string, Promise<void>>();
  /** Scripts (and batched forms) whose function library every master has: called by FCALL, not EVALSHA. */
  private readonly libraries = new Set<string>();
  /** Library loads under way (true once loaded). */
  private readonly libraryLoads = new Map<string, Promise<boolean>>();
  /** When a library load last failed (Date.now()). */
  private libraryRefusedAt = -Infinity;

  constructor(private readonly client: RedisClient, names: readonly string[] = SCRIPT_NAMES) {
    const loaded = loadScripts();
    const use = (name: string) => {
      const s = loaded.get(name);
      if (!s) throw new SluiceError('SLUICE_ERR_SCRIPT', `lua/${name}.lua is missing`);
      this.scripts.set(name, s);
    };
    for (const name of names) {
      use(name);
      // On a cluster the keys of a batch of one-key decisions span slots: there the decisions of a tick
      // go in one batch per master (src/redis/node-batch.ts). The calls of a many-key script each touch
      // one slot: on a cluster they are batched by slot (a throttle's admissions share its hash tag; a
      // sharded throttle's, one batch per shard).
      if (MANY_KEY_BATCHED.has(name) || (BATCHED_SCRIPTS.has(name) && !(client instanceof Cluster))) use(batchName(name));
      if ((BATCHED_SCRIPTS.has(name) || !countsArguments(name)) && client instanceof Cluster && batchesByNode(client)) use(nodeBatchName(name));
      const sharing = MANY_KEY_BATCHED.has(name) ? batchSharing(name as ScriptName) : undefined;
      if (sharing) this.sharing.set(name, sharing);
    }
  }

  /**
   * Loads `names` (and their batched forms) into Redis ahead of their first call: SCRIPT LOAD, on every
   * master of a cluster, once per registry (a Redis restarted empty later is still met by the EVAL on
   * NOSCRIPT). A first call otherwise meets NOSCRIPT and sends the whole source again as an EVAL that
   * Redis compiles then: traced, a worker's first start calls came back 9.5-18 ms after they were sent
   * (the median call 0.4 ms) and missed the start instants they asked for.
   */
  load(names: readonly ScriptName[]): Promise<void> {
    return Promise.all(names.map((name) => this.loadOnce(name))).then(() => undefined);
  }

  private loadOnce(name: ScriptName): Promise<void> {
    let loading = this.preloaded.get(name);
    if (!loading) {
      const scripts = [this.scripts.get(name), this.scripts.get(batchName(name)), this.scripts.get(nodeBatchName(name))].flatMap((s) => (s ? [s] : []));
      const nodes: Redis[] = this.client instanceof Cluster ? this.client.nodes('master') : [this.client];
      // Their function libraries; where Redis takes none (before 7, an ACL), the scripts for EVALSHA.
      loading = Promise.all(scripts.map((s) => this.loadLibrary(s)))
        .then((loaded) => Promise.all(scripts.flatMap((s, i) => (loaded[i] ? [] : nodes.map((node) => node.script('LOAD', s.lua))))))
        .then(() => undefined);
      // A failed load is tried again by the next caller.
      loading.catch(() => this.preloaded.delete(name));
      this.preloaded.set(name, loading);
    }
    return loading;
  }

  /**
   * Loads `s`'s function library on every master (FUNCTION LOAD REPLACE: its name is its text's hash,
   * so a replaced library is the same code), once; resolves true when loaded. A refusal (Redis before
   * 7, an ACL) leaves the registry on EVALSHA, trying again after LIBRARY_RETRY_MS; a load that met no
   * Redis (not connected) is tried again by the next call. Never rejects.
   */
  private loadLibrary(s: LoadedScript): Promise<boolean> {
    let loading = this.libraryLoads.get(s.name);
    if (loading) return loading;
    // Every call of a script not loaded asks: while Redis refuses, it gets its answer without a node
    // list or a promise made for it.
    if (Date.now() - this.libraryRefusedAt < LIBRARY_RETRY_MS) return NOT_LOADED;
    const nodes: Redis[] = this.client instanceof Cluster ? this.client.nodes('master') : [this.client];
    // A cluster not connected yet lists no masters: nothing to load on, asked again by the next call.
    if (nodes.length === 0) return NOT_LOADED;
    loading = Promise.all(nodes.map((node) => node.call('FUNCTION', 'LOAD', 'REPLACE', s.library)))
      .then((replies) => {
        // FUNCTION LOAD answers the library's name: anything else did not load it (something in Redis's place).
        if (replies.some((r) => r !== s.fn)) throw malformedReply('FUNCTION LOAD', replies);
      })
      .then(
        () => {
          this.libraries.add(s.name);
          return true;
        },
        (error: unknown) => {
          // Redis said no (an unknown command before 7, an ACL, a wrong reply): wait before asking again.
          // A connection that failed meanwhile is no answer: the next call asks again.
          if (!isConnectionError(error)) this.libraryRefusedAt = Date.now();
          this.libraryLoads.delete(s.name);
          return false;
        },
      );
    this.libraryLoads.set(s.name, loading);
    return loading;
  }

  /**
   * Sends script `s` by `send`: FCALL of its function once its library is loaded (its includes made once,
   * not on every call: ~8 % of an admission's Redis instructions at one in flight), EVALSHA before that (and the library
   * loaded meanwhile). A script Redis does not have (NOSCRIPT, a function not found) did not run: it is
   * sent once as EVAL, which needs nothing loaded, while `retry()` (the caller still waits); a function
   * not found is loaded again. An FCALL refused at Redis's memory ceiling goes again by EVALSHA (isOutOfMemory).
   */
  private call(s: LoadedScript, send: (cmd: ScriptCommand, first: string) => Promise<unknown>, retry: () => boolean): Promise<unknown> {
    if (!this.libraries.has(s.name)) {
      void this.loadLibrary(s);
      return this.callBySha(s, send, retry);
    }
    return send('fcall', s.fn).catch((error: unknown) => {
      if (isOutOfMemory(error) && retry()) return this.callBySha(s, send, retry);
      if (!isFunctionNotFound(error)) throw error;
      this.libraries.delete(s.name);
      this.libraryLoads.delete(s.name);
      void this.loadLibrary(s);
      if (!retry()) throw error;
      return send('eval', s.lua);
    });
  }

  /** `call` by EVALSHA, then EVAL once on NOSCRIPT while `retry()`. */
  private callBySha(s: LoadedScript, send: (cmd: ScriptCommand, first: string) => Promise<unknown>, retry: () => boolean): Promise<unknown> {
    return send('evalsha', s.sha).catch((error: unknown) => {
      if (!isNoScript(error) || !retry()) throw error;
      return send('eval', s.lua);
    });
  }

  /**
   * EVALSHA `name` with its KEYS and ARGV given by name (src/redis/script-table.ts), EVAL once on
   * NOSCRIPT; the reply is whatever the script returns.
   */
  run<N extends ScriptName>(name: N, keys: ScriptKeys<N>, argv: ScriptArgv<N>): Promise<unknown> {
    let k: string[];
    let a: ScriptArg[];
    try {
      k = keysOf(name, keys);
      a = argvOf(name, argv);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.runPositional(name, k, a);
  }

  /** `run` with KEYS and ARGV already laid out (the one-by-one path of a decision built by DecisionArgs). */
  runPositional(name: ScriptName, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    const s = this.scripts.get(name);
    if (!s) return Promise.reject(new SluiceError('SLUICE_ERR_SCRIPT', `script '${name}' is not registered`));
    const client = this.client;
    // A single node takes the call's RESP made in one pass (src/redis/raw-send.ts): a worker makes one
    // start call per job and its dispatcher a round every few ms, so ioredis's argument copies and
    // per-argument encoding were a measurable part of a worker's CPU per job. Same bytes either way.
    if (!(client instanceof Cluster) && sendsRaw(client)) return this.call(s, (cmd, first) => sendScriptRaw(client, cmd, first, keys, args), always);
    return this.call(s, (cmd, first) => client[cmd](first, keys.length, ...keys, ...args), always);
  }

  /**
   * `runPositional` for a call under a deadline: on a cluster a redirection is followed only while
   * `pending()` (src/redis/cluster-send.ts), and NOSCRIPT is answered by EVAL only while it is true.
   */
  runWhilePending(name: ScriptName, keys: readonly string[], args: readonly ScriptArg[], pending: () => boolean): Promise<unknown> {
    const s = this.scripts.get(name);
    if (!s) return Promise.reject(new SluiceError('SLUICE_ERR_SCRIPT', `script '${name}' is not registered`));
    const client = this.client;
    const send = (cmd: ScriptCommand, first: string): Promise<unknown> =>
      client instanceof Cluster
        ? sendWhilePending(client, cmd, [first, countText(keys.length), ...keys, ...args], pending)
        : sendsRaw(client)
          ? sendScriptRaw(client, cmd, first, keys, args)
          : client[cmd](first, countText(keys.length), ...keys, ...args);
    return this.call(s, send, pending);
  }

  /**
   * Sends a call of a many-key script (MANY_KEY_BATCHED) as `submit` sends a one-key decision: with the
   * calls of the same script issued in this turn of the event loop, as one script call (one node); on
   * a cluster, alone, redirections followed only while it is pending. The client must be ready.
   */
  submitMany(name: ScriptName, call: ManyKeyCall): void {
    if (!this.scripts.has(batchName(name))) {
      this.runWhilePending(name, call.keys, call.args, () => call.pending).then(
        (reply) => call.onReply(reply),
        (error: unknown) => call.onError(error),
      );
      return;
    }
    const client = this.client;
    if (client instanceof Cluster && this.scripts.has(nodeBatchName(name)) && call.keys.length > 0) {
      // A call's keys share a slot: one queue per master that serves it (src/redis/node-batch.ts).
      const node = client.slots[calculateSlot(call.keys[0]!)]?.[0];
      if (node !== undefined) {
        const at = `${name}\u0000node\u0000${node}`;
        if (this.enqueueMany(at, call)) setImmediate(() => this.flushManyToNode(name, node, at));
        return;
      }
    }
    // One queue per script, and on a cluster per slot: a batch's keys must all be in one slot.
    const at = client instanceof Cluster && call.keys.length > 0 ? `${name}\u0000${calculateSlot(call.keys[0]!)}` : name;
    if (this.enqueueMany(at, call)) setImmediate(() => this.flushMany(name, at));
  }

  /** `enqueue` for the calls of a many-key script. */
  private enqueueMany(at: string, call: ManyKeyCall): boolean {
    let queue = this.manyQueues.get(at);
    if (!queue) {
      queue = [];
      this.manyQueues.set(at, queue);
    }
    return queue.push(call) === 1;
  }

  private flushManyToNode(name: ScriptName, node: string, at: string): void {
    const queue = this.manyQueues.get(at);
    if (!queue?.length) return;
    this.manyQueues.delete(at);
    const live = queue.filter((c) => c.pending);
    if (live.length === 1) this.sendMany(name, live);
    else for (let i = 0; i < live.length; i += MAX_BATCH) this.sendManyToNode(name, node, live.slice(i, i + MAX_BATCH));
  }

  /** `sendToNode` for the calls of a many-key script decided in place: each call's key and argument counts, keys and arguments. */
  private sendManyToNode(name: ScriptName, node: string, calls: readonly ManyKeyCall[]): void {
    const args: ScriptArg[] = [countText(calls.length)];
    for (const c of calls) {
      args.push(countText(c.keys.length), countText(c.args.length));
      for (const k of c.keys) args.push(k);
      for (const a of c.args) args.push(a);
    }
    this.sendNodeBatch(name, node, calls, args, (c) => this.sendMany(name, [c]));
  }

  private flushMany(name: ScriptName, at: string): void {
    const queue = this.manyQueues.get(at);
    if (!queue?.length) return;
    this.manyQueues.delete(at);
    for (let i = 0; i < queue.length; i += MAX_BATCH) this.sendMany(name, queue.slice(i, i + MAX_BATCH));
  }

  private sendMany(name: ScriptName, calls: readonly ManyKeyCall[]): void {
    const live = calls.filter((c) => c.pending);
    if (live.length === 0) return;
    const fail = (error: unknown) => {
      for (const c of live) c.onError(error);
    };
    if (live.length === 1) {
      const c = live[0]!;
      this.runWhilePending(name, c.keys, c.args, () => c.pending).then((reply) => c.onReply(reply), fail);
      return;
    }
    const deliver = (reply: unknown) => {
      // One reply per call, or none of them is trusted (each call checks the shape of its own).
      if (!Array.isArray(reply) || reply.length !== live.length) fail(malformedReply(batchName(name), reply));
      else for (let i = 0; i < live.length; i++) live[i]!.onReply(reply[i]);
    };
    const sharing = this.sharing.get(name);
    // A call that repeats the previous one's shared keys and arguments sends only its own (counts 0, 0).
    const shares: boolean[] = live.map((c, i) => sharing !== undefined && i > 0 && sharesWith(sharing, live[i - 1]!, c));
    // A call of an in-place script with the previous call's arguments sends none (its key count negated).
    const inPlace = !countsArguments(name);
    // (A call without keys cannot say so: -0 is 0.)
    const repeats: boolean[] = live.map((c, i) => inPlace && i > 0 && c.keys.length > 0 && repeatsArgs(live[i - 1]!, c));
    const keyCountText = (c: ManyKeyCall, i: number): string => (shares[i] ? '0' : repeats[i] ? `-${c.keys.length}` : countText(c.keys.length));
    const ownKeys = (c: ManyKeyCall, i: number): readonly string[] => (shares[i] ? sharing!.ownKeys.map((p) => c.keys[p - 1]!) : c.keys);
    const ownArgs = (c: ManyKeyCall, i: number): readonly ScriptArg[] => (shares[i] ? sharing!.ownArgs.map((p) => c.args[p - 1]!) : repeats[i] ? NO_ARGS : c.args);
    const client = this.client;
    if (!(client instanceof Cluster) && sendsRaw(client)) {
      // The batch's text straight from its calls: no batch-wide arrays of keys and arguments.
      let keysText = '';
      let keyCount = 0;
      let argsText = bulk(countText(live.length));
      let argCount = 1 + live.length;
      for (let i = 0; i < live.length; i++) argsText += bulk(keyCountText(live[i]!, i));
      if (countsArguments(name)) {
        argCount += live.length;
        for (let i = 0; i < live.length; i++) argsText += bulk(countText(shares[i] ? 0 : live[i]!.args.length));
      }
      for (let i = 0; i < live.length; i++) {
        const keys = ownKeys(live[i]!, i);
        const args = ownArgs(live[i]!, i);
        for (const k of keys) keysText += bulk(k);
        keyCount += keys.length;
        argsText = encodeArgs(argsText, args);
        argCount += args.length;
      }
      const s = this.scripts.get(batchName(name))!;
      this.call(
        s,
        (cmd, first) => sendEncoded(client, cmd, first, keyCount, keysText, argCount, argsText),
        () => live.some((c) => c.pending),
      ).then(deliver, fail);
      return;
    }
    const keys: string[] = [];
    const args: ScriptArg[] = [countText(live.length)];
    for (let i = 0; i < live.length; i++) args.push(keyCountText(live[i]!, i));
    if (countsArguments(name)) for (let i = 0; i < live.length; i++) args.push(countText(shares[i] ? 0 : live[i]!.args.length));
    for (let i = 0; i < live.length; i++) {
      for (const k of ownKeys(live[i]!, i)) keys.push(k);
      for (const a of ownArgs(live[i]!, i)) args.push(a);
    }
    this.runWhilePending(batchName(name) as ScriptName, keys, args, () => live.some((c) => c.pending)).then(deliver, fail);
  }

  /**
   * Sends a one-key decision: after this turn of the event loop's I/O callbacks (setImmediate), together
   * with the other decisions of the same script issued meanwhile (in issue order), as one script call;
   * alone when nothing joined it. Not process.nextTick: Node drains the tick queue after every single I/O
   * callback, so the decisions of 50 HTTP requests read in one poll phase went as 50 calls; they now go
   * as one or two (docs/decisions/batched-decisions.md).
   * The client must be ready (the caller checks, so nothing ever waits in an offline queue).
   */
  submit(name: BatchedScript, call: BatchableCall): void {
    const client = this.client;
    if (client instanceof Cluster) {
      // One queue per master, by the client's slot map; a key whose slot it does not know yet goes alone.
      const node = this.scripts.has(nodeBatchName(name)) ? client.slots[calculateSlot(call.key)]?.[0] : undefined;
      if (node === undefined) this.send(name, [call]);
      else {
        const at = `${name}\u0000${node}`;
        if (this.enqueue(at, call)) setImmediate(() => this.flushNode(name, node, at));
      }
      return;
    }
    if (!this.scripts.has(batchName(name))) {
      this.send(name, [call]);
      return;
    }
    if (this.enqueue(name, call)) setImmediate(() => this.flush(name));
  }

  /**
   * Adds `call` to queue `at`; true when it is the turn's first, whose caller schedules the flush after
   * the turn's I/O callbacks (no closure made for the others: this runs for every decision).
   */
  private enqueue(at: string, call: BatchableCall): boolean {
    let queue = this.queues.get(at);
    if (!queue) {
      queue = [];
      this.queues.set(at, queue);
    }
    return queue.push(call) === 1;
  }

  private flush(name: string): void {
    const queue = this.queues.get(name);
    if (!queue?.length) return;
    this.queues.set(name, []);
    for (let i = 0; i < queue.length; i += MAX_BATCH) this.send(name, i === 0 && queue.length <= MAX_BATCH ? queue : queue.slice(i, i + MAX_BATCH));
  }

  private flushNode(name: string, node: string, at: string): void {
    const queue = this.queues.get(at);
    if (!queue?.length) return;
    this.queues.set(at, []);
    if (queue.length === 1) this.send(name, queue);
    else for (let i = 0; i < queue.length; i += MAX_BATCH) this.sendToNode(name, node, queue.slice(i, i + MAX_BATCH));
  }

  /**
   * Sends `calls` (two or more decisions of `name` whose keys master `node` serves, by the slot map) as
   * one call of the script's cluster form on that master's connection. A decision the node answers
   * ELSEWHERE (the map was stale) did not run there: it goes alone by the cluster client, which follows
   * the redirection, while its caller still waits. Without a ready connection to that master every
   * decision goes alone. A failed batch fails its calls, as on one node (their fail mode answers), and
   * has the cluster read its slot map again (a master demoted by a failover answers READONLY).
   */
  private sendToNode(name: string, node: string, calls: readonly BatchableCall[]): void {
    const args: ScriptArg[] = [countText(calls[0]!.args.length)];
    for (const call of calls) {
      args.push(call.key);
      for (const a of call.args) args.push(a);
    }
    this.sendNodeBatch(name, node, calls, args, (call) => this.send(name, [call]));
  }

  /**
   * Sends `calls` of `name` as one call of its cluster form (`args` laid out for it) on master `node`'s
   * connection, or each by `alone` when that master has no ready connection. A call answered ELSEWHERE
   * goes by `alone` while its caller still waits.
   */
  private sendNodeBatch<C extends { onReply(reply: unknown): void; onError(error: unknown): void; readonly pending?: boolean }>(
    name: string,
    node: string,
    calls: readonly C[],
    args: readonly ScriptArg[],
    alone: (call: C) => void,
  ): void {
    const cluster = this.client as Cluster;
    const connection = masterConnection(cluster, node);
    if (!connection) {
      for (const call of calls) alone(call);
      return;
    }
    const s = this.scripts.get(nodeBatchName(name))!;
    const fail = (error: unknown) => {
      if (error instanceof ReplyError) cluster.refreshSlotsCache();
      for (const call of calls) call.onError(error);
    };
    const deliver = (reply: unknown) => {
      // One reply per call, or none of them is trusted (each call checks the shape of its own).
      if (!Array.isArray(reply) || reply.length !== calls.length) {
        fail(malformedReply(s.name, reply));
        return;
      }
      for (let i = 0; i < calls.length; i++) {
        const call = calls[i]!;
        if (reply[i] !== ELSEWHERE) call.onReply(reply[i]);
        else if (call.pending !== false) alone(call);
      }
    };
    const send = sendsRaw(connection)
      ? (cmd: ScriptCommand, first: string) => sendScriptRaw(connection, cmd, first, NO_KEYS, args)
      : (cmd: ScriptCommand, first: string) => connection[cmd](first, '0', ...args);
    try {
      this.call(s, send, () => calls.some((c) => c.pending !== false)).then(deliver, fail);
    } catch (error) {
      fail(error);
    }
  }

  private send(name: string, calls: readonly BatchableCall[]): void {
    const single = calls.length === 1;
    const s = this.scripts.get(single ? name : batchName(name))!;
    const keys: string[] = [];
    const args: ScriptArg[] = single ? [...calls[0]!.args] : [countText(calls[0]!.args.length)];
    for (const call of calls) {
      keys.push(call.key);
      if (!single) for (const a of call.args) args.push(a);
    }
    const fail = (error: unknown) => {
      for (const call of calls) call.onError(error);
    };
    const deliver = (reply: unknown) => {
      if (single) calls[0]!.onReply(reply);
      // One reply per call, or none of them is trusted (each call checks the shape of its own).
      else if (!Array.isArray(reply) || reply.length !== calls.length) fail(malformedReply(s.name, reply));
      else for (let i = 0; i < calls.length; i++) calls[i]!.onReply(reply[i]);
    };
    const client = this.client;
    // On a cluster a call is alone (single) and may be redirected: only while its caller still waits.
    const send =
      client instanceof Cluster
        ? (cmd: ScriptCommand, first: string) => sendWhilePending(client, cmd, [first, countText(keys.length), ...keys, ...args], () => calls[0]!.pending !== false)
        : sendsRaw(client)
          ? (cmd: ScriptCommand, first: string) => sendScriptRaw(client, cmd, first, keys, args)
          : (cmd: ScriptCommand, first: string) => client[cmd](first, countText(keys.length), ...keys, ...args);
    try {
      // A script Redis does not have did not run: sent once as EVAL unless every caller was answered meanwhile.
      this.call(s, send, () => calls.some((c) => c.pending !== false)).then(deliver, fail);
    } catch (error) {
      fail(error);
    }
  }
}
