// Several limits of one request decided all-or-nothing: every limit is checked and all are charged
// only if all allow, in ONE atomic script call (lua/limits.lua) when their keys can share a script (one
// node, or one cluster slot). Keys in different cluster slots cannot: then each limit is peeked and,
// if all would allow, charged (two round trips, and the race docs/http-api.md describes: a call that
// races another between its peek and its charge can be partly charged; no limit is ever exceeded).
import { Deadline, deadlineError } from '../redis/deadline.js';
import { isDecisionAt, malformedReply } from '../redis/reply.js';
import type { ScriptArg } from '../redis/script-table.js';
import type { ManyKeyCall } from '../redis/scripts.js';
import { oneSlot } from '../redis/slots.js';
import type { Decision } from './decision.js';
import type { LimitCallOptions, Limiter, PreparedCall } from './limiter.js';

/** One limit of a request: the limiter, the caller key and the call's options. */
export interface LimitCall {
  limiter: Limiter;
  key: string;
  options: LimitCallOptions;
}

/** The decisions of `calls`, in order; `allowed` when every one allowed, and only then was anything charged. */
export interface AllDecisions {
  allowed: boolean;
  decisions: Decision[];
}

/**
 * Decides `calls` all-or-nothing. One call is simply that limiter's `limit`. A call the deny cache
 * refuses refuses the request without a Redis call for it; the others are then only peeked.
 * Each limit keeps its own fail mode when Redis cannot decide, and its own metrics.
 */
export function limitAll(calls: readonly LimitCall[]): Promise<AllDecisions> {
  return new Promise<AllDecisions>((resolve, reject) => limitAllWith(calls, resolve, reject));
}

/**
 * limitAll with callbacks instead of a promise (the middleware's path: no promise per request):
 * exactly one of `done` and `failed` is called, once, maybe before this returns (a deny-cache
 * refusal of a single limit). Neither may throw.
 */
export function limitAllWith(calls: readonly LimitCall[], done: (result: AllDecisions) => void, failed: (error: unknown) => void): void {
  if (calls.length === 0) return done({ allowed: true, decisions: [] });
  // limitWith answers a call it cannot make (a closed instance, a bad cost) through `failed` too.
  if (calls.length === 1) return calls[0]!.limiter.limitWith(calls[0]!.key, calls[0]!.options, (d) => done(allOf([d])), failed);
  // Loops, not map/some with closures: this runs for every request with several rules.
  const prepared = new Array<Decision | PreparedCall>(calls.length);
  let denied = false;
  try {
    for (let i = 0; i < calls.length; i++) {
      const c = calls[i]!;
      const p = c.limiter.prepare(c.key, c.options, true);
      prepared[i] = p;
      if (!('entry' in p)) denied = true;
    }
  } catch (error) {
    return failed(error);
  }
  if (denied) return void peekUndenied(calls, prepared).then(done, failed);
  try {
    send(calls, prepared as PreparedCall[], done, failed);
  } catch (error) {
    failed(error);
  }
}

/** The `limits` script call of calls none of which the deny cache refuses. */
function send(calls: readonly LimitCall[], prepared: PreparedCall[], done: (result: AllDecisions) => void, failed: (error: unknown) => void): void {
  const ctx = calls[0]!.limiter.context;
  const keys = new Array<string>(prepared.length);
  let oneContext = true;
  for (let i = 0; i < prepared.length; i++) {
    keys[i] = prepared[i]!.entry.redisKey;
    if (calls[i]!.limiter.context !== ctx) oneContext = false;
  }
  // Not ready yet (each limiter waits for the connection within its own deadline), limiters of
  // different instances, or keys in different cluster slots: the peek-then-charge path.
  if (ctx.client.status !== 'ready' || !oneContext || !oneSlot(ctx.client, keys)) return void peekThenCharge(calls).then(done, failed);
  const call = new AllCall(calls, prepared, keys, argsOf(calls, prepared), ctx.observer ? performance.now() : 0);
  call.resolve = done;
  call.reject = failed;
  // The all-or-nothing calls of the requests read in one turn of the event loop go as one script call.
  ctx.scripts.submitMany('limits', call);
}

/** The last request's `limits` arguments and the per-limit arrays they were made of. */
let lastParts: (readonly ScriptArg[])[] = [];
let lastScripts: string[] = [];
let lastArgs: readonly ScriptArg[] = [];

/**
 * The `limits` arguments of a request: each limit's script name, then its arguments (lua/limits.lua
 * knows each script's count). A request made of the same limiters' same argument arrays as the one
 * before (DecisionArgs hands out one array per repeated call) gets the same array, unbuilt, and a
 * batch sees it repeat at a glance (repeatsArgs). Never changed once made.
 */
function argsOf(calls: readonly LimitCall[], prepared: readonly PreparedCall[]): readonly ScriptArg[] {
  let same = prepared.length === lastParts.length;
  for (let i = 0; same && i < prepared.length; i++) same = prepared[i]!.args === lastParts[i] && calls[i]!.limiter.script === lastScripts[i];
  if (same) return lastArgs;
  const args: ScriptArg[] = [];
  const parts = new Array<readonly ScriptArg[]>(prepared.length);
  const scripts = new Array<string>(prepared.length);
  for (let i = 0; i < calls.length; i++) {
    parts[i] = prepared[i]!.args;
    scripts[i] = calls[i]!.limiter.script;
    args.push(scripts[i]!);
    for (const v of parts[i]!) args.push(v);
  }
  lastParts = parts;
  lastScripts = scripts;
  lastArgs = args;
  return args;
}

function allOf(decisions: Decision[]): AllDecisions {
  return { allowed: decisions.every((d) => d.allowed), decisions };
}

/** The deny cache refused some: nothing is charged; the others are peeked (each refusal counted once). */
async function peekUndenied(calls: readonly LimitCall[], prepared: readonly (Decision | PreparedCall)[]): Promise<AllDecisions> {
  const decisions = await Promise.all(calls.map((c, i) => {
    const p = prepared[i]!;
    return 'entry' in p ? c.limiter.peek(c.key, c.options) : p;
  }));
  return { allowed: false, decisions };
}

/** Keys in several slots: peek all, then charge all if all would allow (each charge still atomic on its own). */
async function peekThenCharge(calls: readonly LimitCall[]): Promise<AllDecisions> {
  const peeks = await Promise.all(calls.map((c) => c.limiter.peek(c.key, c.options)));
  if (peeks.some((d) => !d.allowed)) return { allowed: false, decisions: peeks };
  return allOf(await Promise.all(calls.map((c) => c.limiter.limit(c.key, c.options))));
}

/** The `limits` script call in flight, under the shortest deadline of its limits. */
class AllCall extends Deadline implements ManyKeyCall {
  /** The shortest deadline of the limits: the one call answers for all of them. */
  private readonly timeoutMs: number;
  resolve!: (result: AllDecisions) => void;
  reject!: (error: unknown) => void;

  constructor(
    private readonly calls: readonly LimitCall[],
    private readonly prepared: readonly PreparedCall[],
    readonly keys: readonly string[],
    readonly args: readonly ScriptArg[],
    private readonly started: number,
  ) {
    super();
    this.timeoutMs = calls[0]!.limiter.policy.timeoutMs;
    for (const c of calls) if (c.limiter.policy.timeoutMs < this.timeoutMs) this.timeoutMs = c.limiter.policy.timeoutMs;
    this.start(this.timeoutMs);
  }

  onReply(reply: unknown): void {
    const ok = isAllReply(reply, this.calls.length);
    if (!this.settle()) {
      if (ok) for (let i = 0; i < this.calls.length; i++) this.calls[i]!.limiter.lateReply(reply, 1 + 4 * i, reply[0] === 1);
      return;
    }
    if (!ok) return this.fail(malformedReply('limits', reply));
    const charged = reply[0] === 1;
    try {
      const decisions = new Array<Decision>(this.calls.length);
      for (let i = 0; i < this.calls.length; i++) {
        const p = this.prepared[i]!;
        decisions[i] = this.calls[i]!.limiter.decisionOf(reply, 1 + 4 * i, charged ? p.leaseId : '', p.nowMs, this.started, p.entry, p.cost, p.stampMs);
      }
      this.resolve({ allowed: charged, decisions });
    } catch (error) {
      this.reject(error);
    }
  }

  onError(error: unknown): void {
    if (this.settle()) this.fail(error);
  }

  protected expire(): void {
    this.fail(deadlineError('decision', this.timeoutMs));
  }

  /** Redis could not decide: each limit's fail mode does (or the error, when it is not Redis's). */
  private fail(error: unknown): void {
    try {
      this.resolve(allOf(this.calls.map((c, i) => c.limiter.failureOf(error, this.prepared[i]!.nowMs, this.started))));
    } catch (e) {
      this.reject(e);
    }
  }
}

/** `{allowed 0|1, then per limit allowed 0|1, remaining, retryAfter, resetAt}` for `n` limits. */
function isAllReply(reply: unknown, n: number): reply is [0 | 1, ...number[]] {
  if (!Array.isArray(reply) || reply.length !== 1 + 4 * n || (reply[0] !== 0 && reply[0] !== 1)) return false;
  for (let i = 0; i < n; i++) if (!isDecisionAt(reply, 1 + 4 * i)) return false;
  return true;
}

