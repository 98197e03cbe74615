// A throttle worker's BullMQ fetch that wakes nobody for nothing: BullMQ's moveToActive and
// lua/throttle-unmark.lua in one MULTI on the worker's connection.
//
// Why: BullMQ's fetch adds its base marker for every job it hands out, so that a worker blocked on the
// marker looks for the next job. A throttle's jobs reach the wait list a round at a time, a delivery time
// before their starts, so after a fetch there is usually none left. The marker then woke every other
// worker process blocked on it, for a fetch that found nothing, and the fetching worker's own loop
// fetched again at once and found nothing too: at 200/s with two processes, per job started, 3.7 BullMQ
// script calls (2 of them empty fetches) and 1.9 blocking pops (MONITOR of bench/global-cap.ts). The
// start gate already took the marker out (lua/throttle-start.lua), but only in the call after the
// fetch, when the other processes had been woken. Redis serves blocked clients after a transaction, so
// the marker taken out inside it wakes nobody, and the worker, told that none waits, blocks on the
// marker for its next job instead of asking once more (BullMQ's own `drained` state, which its next
// empty fetch would have set).
import { Command } from 'ioredis';
import { loadScripts } from '../redis/script-forms.js';
import { isNoScript } from '../redis/scripts.js';

/** The part of BullMQ's RedisQueueBackend used here (node_modules/bullmq/dist/esm/classes/redis-queue-backend.d.ts). */
interface RedisBackend {
  moveToActive(token: string, name?: string): Promise<unknown>;
  execCommand(client: unknown, commandName: string, args: unknown[]): Promise<unknown>;
  version: string;
  queue: { keys: Record<string, string> };
}

/** A script BullMQ defined on its ioredis client (ioredis's Script). */
interface DefinedScript {
  sha: string;
  lua: string;
  numberOfKeys: number | null;
}

/** The part of BullMQ's client (a proxy of an ioredis client) used here. */
interface RawClient {
  status?: string;
  isCluster?: boolean;
  scriptsSet?: Record<string, DefinedScript | undefined>;
  sendCommand(command: Command): unknown;
}

/** The part of an ioredis transaction object used here (a cluster's: MULTI reaches its keys' node only so). */
interface Transaction {
  call(command: string, ...args: Arg[]): unknown;
  exec(): Promise<[Error | null, unknown][] | null>;
}

type Arg = string | number | Buffer;
/** One command of the transaction: its name and arguments. */
type Step = [string, Arg[]];

/** BullMQ's fetch reply: [job hash as a flat array, job id, rate-limit delay, next delayed instant]. */
type FetchReply = [unknown, string | undefined, ...unknown[]];

const isRedisBackend = (b: unknown): b is RedisBackend =>
  typeof (b as RedisBackend | undefined)?.execCommand === 'function' &&
  typeof (b as RedisBackend).moveToActive === 'function' &&
  typeof (b as RedisBackend).queue?.keys?.marker === 'string';

/** What the worker tells `quietFetches`. */
export interface QuietFetchHooks {
  /** Asked as each fetch begins: fetch quietly? (The fetch after a blocking wait on the marker woke.) */
  quiet: () => boolean;
  /** A quiet fetch took this job, the last one waiting. */
  noneWaiting: (jobId: string) => void;
}

const ignore = () => undefined;
/** Replies as text, as ioredis's own command methods give them (a bare Command gives Buffers). */
const UTF8 = { replyEncoding: 'utf8' as const };

/**
 * `steps` in one MULTI on a connected single node, as bare commands that the worker's write coalescing
 * sends in one write (an ioredis transaction object copies every script BullMQ defined into itself: a
 * profile put a tenth of a worker's busy time at 200/s in making them). Resolves to each step's reply,
 * an Error for a step that failed.
 */
function bareTransaction(client: RawClient, steps: Step[]): Promise<unknown[]> {
  const multi = new Command('multi', []);
  client.sendCommand(multi);
  multi.promise.catch(ignore);
  for (const [name, args] of steps) {
    const command = new Command(name, args, UTF8);
    // Inside the transaction: dropped, not sent again, should the connection close before EXEC's reply.
    command.inTransaction = true;
    client.sendCommand(command);
    command.promise.catch(ignore);
  }
  const exec = new Command('exec', [], UTF8);
  client.sendCommand(exec);
  return exec.promise as Promise<unknown[]>;
}

/** `steps` in one MULTI through ioredis's transaction object (a cluster: it sends them to their keys' node). */
async function objectTransaction(client: { multi: () => Transaction }, steps: Step[]): Promise<unknown[]> {
  const tx = client.multi();
  for (const [name, args] of steps) tx.call(name, ...args);
  const results = await tx.exec();
  if (!results) throw new Error('BullMQ fetch: transaction aborted');
  return results.map(([error, reply]) => error ?? reply);
}

/**
 * Makes `backend`'s fetches, those `hooks.quiet()` asks for, take out the base marker in the same
 * transaction when no job is left waiting, and tells `hooks.noneWaiting` the job so fetched. Only those:
 * a fetch beside others (the loop's next one at once, a round's extra fetches) usually leaves jobs
 * waiting, and made for every fetch the transaction bought nothing at 2,000/s for a script call more per
 * fetch (bench/global-cap.ts). A backend that is not BullMQ's Redis one, or a client that is not
 * ioredis's, is left as it is; returns whether the fetches were changed.
 */
export function quietFetches(backend: unknown, hooks: QuietFetchHooks): boolean {
  if (!isRedisBackend(backend)) return false;
  const unmark = loadScripts().get('throttle-unmark');
  if (!unmark) return false;
  const { wait, prioritized, marker } = backend.queue.keys;
  if (!wait || !prioritized || !marker) return false;
  const exec = backend.execCommand.bind(backend);
  const fetchName = `moveToActive:${backend.version}`;
  // Each script by EVALSHA while Redis is known to have it, by its text (EVAL) otherwise: the first time,
  // and again after a NOSCRIPT (a Redis restarted or flushed).
  let unmarkLoaded = false;

  const quietExec = (client: unknown, commandName: string, args: unknown[]) => {
    const raw = client as RawClient & { multi?: () => Transaction };
    const fetch = commandName === 'moveToActive' ? raw.scriptsSet?.[fetchName] : undefined;
    if (!fetch || typeof fetch.numberOfKeys !== 'number') return exec(client, commandName, args);
    const keysAndArgs = args as Arg[];
    const single = !raw.isCluster && raw.status === 'ready';
    if (!single && typeof raw.multi !== 'function') return exec(client, commandName, args);
    const send = (fetchByText: boolean): Promise<unknown> => {
      const steps: Step[] = [
        fetchByText ? ['eval', [fetch.lua, fetch.numberOfKeys!, ...keysAndArgs]] : ['evalsha', [fetch.sha, fetch.numberOfKeys!, ...keysAndArgs]],
        unmarkLoaded ? ['evalsha', [unmark.sha, 3, wait, prioritized, marker]] : ['eval', [unmark.lua, 3, wait, prioritized, marker]],
      ];
      const sent = single ? bareTransaction(raw, steps) : objectTransaction(raw as { multi: () => Transaction }, steps);
      return sent.then(([reply, unmarked]) => {
        unmarkLoaded = !(unmarked instanceof Error);
        if (reply instanceof Error) {
          // Redis does not have BullMQ's script (a fresh server, a restart, a flush): its text, once.
          if (!fetchByText && isNoScript(reply)) return send(true);
          throw reply;
        }
        const jobId = (reply as FetchReply)[1];
        if (unmarked === 1 && (reply as FetchReply)[0] && typeof jobId === 'string') hooks.noneWaiting(jobId);
        return reply;
      }, (error: unknown) => {
        // Redis discarded the transaction (EXECABORT: a command refused as it was queued, e.g. at its
        // memory ceiling): nothing in it ran, so the fetch goes as BullMQ sends it, and answers as BullMQ's.
        if (error instanceof Error && /EXECABORT/.test(error.message)) return exec(client, commandName, args);
        throw error;
      });
    };
    return send(false);
  };
  // BullMQ's own fetch, run on a view of the backend whose commands go through quietExec: the keys and
  // arguments stay BullMQ's to build.
  const quietBackend = Object.create(backend) as RedisBackend;
  quietBackend.execCommand = quietExec;
  const moveToActive = backend.moveToActive;
  backend.moveToActive = (token: string, name?: string) => moveToActive.call(hooks.quiet() ? quietBackend : backend, token, name);
  return true;
}
