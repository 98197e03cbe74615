// The decision limiter façade: validates a call, turns it into one script call on one key, and
// applies the policy's deadline and fail mode. It owns no storage logic: that is in lua/.
import { createHash } from 'node:crypto';
import { SluiceError, isSluiceError } from '../errors.js';
import { timeArg, type Clock, type ClockSource } from '../redis/clock.js';
import { whenReady, type RedisClient } from '../redis/connection.js';
import { Deadline, deadlineError, withDeadline } from '../redis/deadline.js';
import { integerReply, isDecisionAt, isDecisionReply, malformedReply } from '../redis/reply.js';
import type { IdentityOptions, KeyBuilder } from '../redis/keys.js';
import type { ScriptArg } from '../redis/script-table.js';
import type { BatchableCall, ScriptRegistry } from '../redis/scripts.js';
import type { AlgorithmSpec } from './algorithm.js';
import { newLeaseId } from './concurrency.js';
import { checkCost } from './cost.js';
import { DEFAULT_KEY_CACHE_SIZE, KeyCache, type KeyEntry } from './key-cache.js';
import { DecisionArgs } from './decision-args.js';
import { decisionFromReply, type Decision, type DecisionOptions } from './decision.js';
import { parsePolicy, specOf, type Algorithm, type Policy, type PolicyInput } from './policy.js';

/** How a decision ended, for metrics. */
export type DecisionOutcome = 'allowed' | 'refused' | 'fail-open' | 'fail-closed';

/** Told about every decision (metrics, logs). Must not throw and must be cheap. */
export interface DecisionObserver {
  onDecision(event: { policy: string; algorithm: Algorithm; outcome: DecisionOutcome; latencyMs: number; error?: unknown }): void;
  /** A connection-level error of a client sluice owns (refused connection, reset, ...). */
  onRedisError?(error: Error): void;
  /**
   * A decision's script ran in Redis after its deadline had passed and the fail mode had answered
   * (Redis was slow, not down): `charged` when the late run allowed the call and took its cost.
   */
  onLateDecision?(event: { policy: string; algorithm: Algorithm; charged: boolean }): void;
  /** A decision was asked for before the client had ever been ready (before `sluice.ready()` resolved). */
  onDecisionBeforeReady?(event: { policy: string; algorithm: Algorithm }): void;
  /** A call was refused by the limiter's deny cache, without a Redis call (not an `onDecision`). */
  onDenyCacheHit?(event: { policy: string; algorithm: Algorithm }): void;
}

/** Options of one limiter (`sluice.limiter(policy, options)`), beyond its policy. */
export interface LimiterOptions {
  /**
   * Deny cache (default off; the HTTP middleware and `sluice serve` turn it on): a key Redis refused
   * until T is refused in this process until T without a Redis call, for calls of the cost refused. Never admits anything; a reset from another process is seen at T at the latest. Not for
   * concurrency limiters (a slot frees when released, which no refusal can foresee), nor a sliding
   * log with `recordRejected` (every refused call must reach Redis to be recorded).
   */
  denyCache?: boolean;
  /** Most caller keys remembered (their Redis key, and their refusal with the deny cache); default 10,000. */
  keyCacheSize?: number;
}

/** What a Limiter needs from the sluice instance that made it. */
export interface LimiterContext {
  client: RedisClient;
  scripts: ScriptRegistry;
  keys: KeyBuilder;
  clockSource: ClockSource;
  clock: Clock;
  observer?: DecisionObserver | undefined;
  isClosed(): boolean;
  /** True once the client has been ready at least once. */
  wasReady(): boolean;
}

/** @internal One call checked and laid out by `Limiter.prepare`, not sent yet. */
export interface PreparedCall {
  entry: KeyEntry;
  /** ARGV of the limiter's script, in its order (shared with calls like it: never changed). */
  args: readonly ScriptArg[];
  /** '' unless a concurrency call that records. */
  leaseId: string;
  cost: number;
  /** The deny cache's stamp of the call (0 without a deny cache). */
  stampMs: number;
  nowMs: number | undefined;
}

/** Options of limit/peek: cost and time, and whether the key is a secret to be hashed. */
export type LimitCallOptions = DecisionOptions & IdentityOptions;

const NO_OPTIONS: LimitCallOptions = Object.freeze({});

/** Prefixed to a sensitive key in the key cache, so `k` and sensitive `k` (two Redis keys) never share an entry. */
const SENSITIVE_MARK = '\u0001';
/** Ends the slot value in a key cache id (slot values never hold it: they are descriptor identities). */
const SLOT_MARK = '\u0002';

/** Epoch ms from the monotonic clock: the deny cache's time when neither the caller nor the client clock gives one. */
const monotonicEpochMs = (): number => performance.timeOrigin + performance.now();

/** While Redis is unavailable a fail-closed decision asks the caller to come back after this long. */
export const FAIL_CLOSED_RETRY_MS = 1_000;

export class Limiter {
  readonly policy: Policy;
  /** The key namespace: the policy's name, or a hash of the algorithm and its parameters. */
  readonly namespace: string;
  private readonly spec: AlgorithmSpec<Policy>;
  /** The policy's size (`limit` in every decision) and the largest cost one call may have. */
  readonly maxCost: number;
  /** The script's arguments by name, the policy's laid out once: a call sets only its own. */
  private readonly args: DecisionArgs;
  /** Caller key -> Redis key (and its last refusal, with the deny cache), bounded. */
  private readonly cache: KeyCache;
  /** @internal True when refusals are remembered (the option, and never for concurrency). */
  readonly denyCache: boolean;

  /** @internal Made by `sluice.limiter(policy, options)`. */
  constructor(private readonly ctx: LimiterContext, policy: PolicyInput | Policy, options: LimiterOptions = {}) {
    this.policy = parsePolicy(policy);
    this.spec = specOf(this.policy);
    this.maxCost = this.spec.limit(this.policy);
    this.namespace = this.policy.name ?? defaultNamespace(this.policy);
    this.args = new DecisionArgs(this.spec.script, this.spec.policyArgs(this.policy));
    this.cache = new KeyCache(options.keyCacheSize ?? DEFAULT_KEY_CACHE_SIZE);
    this.denyCache = options.denyCache === true && denialsHold(this.policy);
  }

  /** Decides and, when allowed, charges `cost` (default 1) to `key`. Refusal is a result, not an error. */
  limit(key: string, options?: LimitCallOptions): Promise<Decision> {
    return this.decide(key, options ?? NO_OPTIONS, true);
  }

  /** Decides without charging: the state of `key` as a call of `cost` would see it now. */
  peek(key: string, options?: LimitCallOptions): Promise<Decision> {
    return this.decide(key, options ?? NO_OPTIONS, false);
  }

  /** Forgets all state of `key` (it is back to full capacity). */
  async reset(key: string, options: IdentityOptions = {}): Promise<void> {
    const k = this.keyOf(key, options);
    // This process stops refusing the key from memory at once; other processes at the refusal's end.
    this.cache.forget(cacheId(key, options));
    await this.call('reset', () => this.ctx.client.del(k));
  }

  /** Concurrency only: gives a lease back. Resolves false when it was already released or expired. */
  async release(key: string, leaseId: string, options: IdentityOptions = {}): Promise<boolean> {
    this.requireConcurrency('release');
    const k = this.keyOf(key, options);
    const n = await this.call('release', () => this.ctx.scripts.run('concurrency-release', { state: k }, { leaseId }));
    return integerReply('concurrency-release', n) > 0;
  }

  /** Concurrency only: keeps a live lease for another `leaseMs` from now. False when it is already gone. */
  async extend(key: string, leaseId: string, options: LimitCallOptions = {}): Promise<boolean> {
    this.requireConcurrency('extend');
    const k = this.keyOf(key, options);
    const leaseMs = (this.policy as Extract<Policy, { algorithm: 'concurrency' }>).leaseMs;
    const now = timeArg(options.nowMs, this.ctx.clockSource, this.ctx.clock, 'ms');
    const n = await this.call('extend', () => this.ctx.scripts.run('concurrency-extend', { state: k }, { now, leaseMs, leaseId }));
    return integerReply('concurrency-extend', n) > 0;
  }

  /** The Redis key holding `key`'s state (for operators and tests). */
  keyOf(key: string, options: IdentityOptions = {}): string {
    const { keys } = this.ctx;
    const slot = options.slot === undefined ? undefined : keys.limiterIdentity(options.slot, options);
    return keys.limiter(this.namespace, keys.limiterIdentity(key, options), this.spec.suffix, slot);
  }

  /** @internal The instance this limiter decides on (all-or-nothing calls of several limiters share it). */
  get context(): LimiterContext {
    return this.ctx;
  }

  /** @internal The decision script this limiter runs. */
  get script(): AlgorithmSpec<Policy>['script'] {
    return this.spec.script;
  }

  /**
   * @internal Everything one call sends, checked and laid out (the deny cache asked first): a Decision
   * when the deny cache refuses it, else the call's parts. Throws what a call rejects with.
   */
  prepare(key: string, options: LimitCallOptions, record: boolean): Decision | PreparedCall {
    if (this.ctx.isClosed()) throw new SluiceError('SLUICE_ERR_CLOSED', 'this sluice instance is closed');
    const cost = checkCost(options.cost, this.maxCost, "the policy's limit", 'such a call could never be allowed');
    const id = cacheId(key, options);
    const entry = this.cache.get(id) ?? this.cache.add(id, this.keyOf(key, options));
    // The instant the script will decide at, when this process knows it (the caller's or the client clock).
    const clientNowMs = options.nowMs ?? (this.ctx.clockSource === 'client' ? this.ctx.clock.nowMs() : undefined);
    const now = timeArg(clientNowMs, this.ctx.clockSource, this.ctx.clock, this.spec.unit);
    let stampMs = 0;
    if (this.denyCache) {
      // The script's own instant (the time argument as sent); with Redis TIME, a moment before the
      // script runs, so a refusal's end is never placed later than Redis would place it.
      stampMs = now === '' ? monotonicEpochMs() : this.spec.unit === 'us' ? Number(now) / 1000 : Number(now);
      const denied = this.denied(entry, cost, stampMs);
      if (denied) return denied;
    }
    const leaseId = record && this.policy.algorithm === 'concurrency' ? newLeaseId(cost) : '';
    return { entry, args: this.args.build(now, cost, record, leaseId), leaseId, cost, stampMs, nowMs: options.nowMs };
  }

  /**
   * One decision: one script call, one promise, one DecisionCall object that carries the deadline, the
   * reply mapping and the fail mode (no async wrapper, no per-call timer): this runs for every request.
   */
  private decide(key: string, options: LimitCallOptions, record: boolean): Promise<Decision> {
    return new Promise<Decision>((resolve, reject) => this.run(key, options, record, resolve, reject));
  }

  /**
   * @internal `limit` with callbacks instead of a promise (the HTTP edge's per-request path: no
   * promise, no reaction, no microtask). Exactly one of them is called, once: synchronously when the
   * call cannot be made or the deny cache refuses it, else with the reply, the failure or the deadline.
   * Neither may throw: a batch of decisions is answered in one loop.
   */
  limitWith(key: string, options: LimitCallOptions, done: (decision: Decision) => void, failed: (error: unknown) => void): void {
    this.run(key, options, true, done, failed);
  }

  private run(key: string, options: LimitCallOptions, record: boolean, resolve: (decision: Decision) => void, reject: (error: unknown) => void): void {
    let prepared: Decision | PreparedCall;
    try {
      prepared = this.prepare(key, options, record);
    } catch (error) {
      reject(error);
      return;
    }
    if (!('entry' in prepared)) {
      resolve(prepared);
      return;
    }
    const { entry, args, leaseId, cost, stampMs } = prepared;
    const call = new DecisionCall(this, entry, args, leaseId, options.nowMs, this.ctx.observer ? performance.now() : 0, record, cost, stampMs);
    call.resolve = resolve;
    call.reject = reject;
    const { client, scripts } = this.ctx;
    const script = this.spec.script;
    if (client.status === 'ready') {
      // Decisions of this script issued in the same turn of the event loop travel as one script call (one round trip).
      scripts.submit(script, call);
    } else {
      if (!this.ctx.wasReady()) this.ctx.observer?.onDecisionBeforeReady?.({ policy: this.namespace, algorithm: this.policy.algorithm });
      // Not once the deadline has passed: the caller has its answer, and a late send would charge it.
      whenReady(client, this.policy.timeoutMs).then(
        () => call.pending && scripts.submit(script, call),
        (e: unknown) => call.onError(e),
      );
    }
  }

  /**
   * @internal A script reply turned into the caller's decision. A reply of the wrong shape (something
   * in front of Redis answered instead of the script) is a failure: the fail mode decides, and says so.
   */
  decisionOf(reply: unknown, at: number, leaseId: string, nowMs: number | undefined, started: number, entry: KeyEntry, cost: number, stampMs: number): Decision {
    if (!(at === 0 ? isDecisionReply(reply) : Array.isArray(reply) && isDecisionAt(reply, at))) return this.failDecision(malformedReply(this.spec.script, reply), nowMs, started);
    const numbers = reply as number[];
    const decision = decisionFromReply(numbers, at, this.maxCost, this.spec.unit);
    if (this.denyCache) {
      // The exact retry time of the reply (µs scripts unrounded), from the instant the call was stamped.
      const retryMs = this.spec.unit === 'us' ? numbers[at + 2]! / 1000 : numbers[at + 2]!;
      entry.denial = decision.allowed || retryMs <= 0 ? undefined : { untilMs: stampMs + retryMs, cost, remaining: decision.remaining, resetAtMs: decision.resetAtMs };
    }
    if (leaseId && decision.allowed) decision.leaseId = leaseId;
    if (this.ctx.observer) this.observe(decision.allowed ? 'allowed' : 'refused', started);
    return decision;
  }

  /**
   * @internal What a failed call ends with: the fail mode's decision, or the error when it is not
   * Redis's fault. SLUICE_ERR_SCRIPT (a malformed reply) is Redis's side too: the fail mode decides.
   */
  failureOf(error: unknown, nowMs: number | undefined, started: number): Decision {
    if (isSluiceError(error) && error.code !== 'SLUICE_ERR_REDIS_UNAVAILABLE' && error.code !== 'SLUICE_ERR_SCRIPT') throw error;
    return this.failDecision(error, nowMs, started);
  }

  /** @internal A reply that came after the deadline: the script ran, though the fail mode had answered. */
  lateReply(reply: unknown, at: number, record: boolean): void {
    if (!Array.isArray(reply) || !isDecisionAt(reply, at)) return;
    this.ctx.observer?.onLateDecision?.({ policy: this.namespace, algorithm: this.policy.algorithm, charged: record && reply[at] === 1 });
  }

  /** The deny cache's refusal of a call of `cost` at `nowMs`, or undefined when Redis must decide. */
  private denied(entry: KeyEntry, cost: number, nowMs: number): Decision | undefined {
    const d = entry.denial;
    if (!d) return undefined;
    if (nowMs >= d.untilMs) {
      entry.denial = undefined;
      return undefined;
    }
    // Only the cost refused: a smaller one may fit, a larger one waits longer (its Retry-After would be early).
    if (cost !== d.cost) return undefined;
    this.ctx.observer?.onDenyCacheHit?.({ policy: this.namespace, algorithm: this.policy.algorithm });
    return { allowed: false, limit: this.maxCost, remaining: d.remaining, retryAfterMs: Math.ceil(d.untilMs - nowMs), resetAtMs: d.resetAtMs };
  }

  /** Runs one Redis call within the policy's deadline, waiting for a connection only inside it. */
  private call<T>(what: string, work: () => Promise<T>): Promise<T> {
    const { client } = this.ctx;
    const timeoutMs = this.policy.timeoutMs;
    if (client.status === 'ready') return withDeadline(work, timeoutMs, what);
    return withDeadline(() => whenReady(client, timeoutMs).then(work), timeoutMs, what);
  }

  /** Redis could not decide: the policy's fail mode does, and the result says so. */
  private failDecision(error: unknown, nowMs: number | undefined, started: number): Decision {
    const open = this.policy.failMode === 'open';
    this.observe(open ? 'fail-open' : 'fail-closed', started, error);
    return {
      allowed: open,
      limit: this.maxCost,
      remaining: 0,
      retryAfterMs: open ? 0 : FAIL_CLOSED_RETRY_MS,
      resetAtMs: nowMs ?? this.ctx.clock.nowMs(),
      failure: open ? 'fail-open' : 'fail-closed',
    };
  }

  private observe(outcome: DecisionOutcome, started: number, error?: unknown): void {
    this.ctx.observer?.onDecision({
      policy: this.namespace,
      algorithm: this.policy.algorithm,
      outcome,
      latencyMs: performance.now() - started,
      ...(error === undefined ? {} : { error }),
    });
  }


  private requireConcurrency(what: string): void {
    if (this.policy.algorithm !== 'concurrency') {
      throw new SluiceError('SLUICE_ERR_WRONG_ALGORITHM', `${what}() is for concurrency limiters; this one is '${this.policy.algorithm}'`);
    }
  }
}

/**
 * 6 base64url characters (36 bits) of a hash of the algorithm and its parameters: two different
 * policies never share keys by accident. Short on purpose: the key's length decides its Redis
 * allocation (docs/decisions/short-default-namespace.md); the key's last segment names the algorithm.
 */
function defaultNamespace(policy: Policy): string {
  const { name: _n, failMode: _f, timeoutMs: _t, ...params } = policy;
  const canonical = JSON.stringify(Object.entries(params).sort(([a], [b]) => a.localeCompare(b)));
  return createHash('sha1').update(canonical).digest('base64url').slice(0, 6);
}

/** One decision in flight: settled by the reply, by an error, or by the policy's deadline, whichever is first. */
class DecisionCall extends Deadline implements BatchableCall {
  resolve!: (decision: Decision) => void;
  reject!: (error: unknown) => void;

  constructor(
    private readonly limiter: Limiter,
    private readonly entry: KeyEntry,
    readonly args: readonly ScriptArg[],
    private readonly leaseId: string,
    private readonly nowMs: number | undefined,
    private readonly started: number,
    private readonly record: boolean,
    private readonly cost: number,
    private readonly stampMs: number,
  ) {
    super();
    this.start(limiter.policy.timeoutMs);
  }

  get key(): string {
    return this.entry.redisKey;
  }

  onReply(reply: unknown): void {
    if (!this.settle()) {
      this.limiter.lateReply(reply, 0, this.record);
      return;
    }
    // The decision is made inside the try, the caller told outside it: a caller's callback that threw
    // must not be answered a second time (limitWith's callbacks are plain functions, not a promise).
    let decision: Decision;
    try {
      decision = this.limiter.decisionOf(reply, 0, this.leaseId, this.nowMs, this.started, this.entry, this.cost, this.stampMs);
    } catch (error) {
      this.reject(error);
      return;
    }
    this.resolve(decision);
  }

  onError(error: unknown): void {
    if (!this.settle()) return;
    let decision: Decision;
    try {
      decision = this.limiter.failureOf(error, this.nowMs, this.started);
    } catch (e) {
      this.reject(e);
      return;
    }
    this.resolve(decision);
  }

  protected expire(): void {
    let decision: Decision;
    try {
      decision = this.limiter.failureOf(deadlineError('decision', this.limiter.policy.timeoutMs), this.nowMs, this.started);
    } catch (e) {
      this.reject(e);
      return;
    }
    this.resolve(decision);
  }
}

/**
 * Whether a refusal holds until its retry time whatever else happens, so the deny cache may repeat it:
 * not for concurrency (a slot frees when released, which no refusal foresees), not for a sliding log
 * that records refused calls (each refused call pushes the retry time further: Redis must see it).
 */
function denialsHold(policy: Policy): boolean {
  if (policy.algorithm === 'concurrency') return false;
  if (policy.algorithm === 'sliding-log' && policy.recordRejected) return false;
  return true;
}

/**
 * The key cache's id of a caller key: a sensitive key is another Redis key than the same text verbatim,
 * and a key in a slot another than the same key without one.
 */
function cacheId(key: string, options: IdentityOptions): string {
  const id = options.sensitive ? SENSITIVE_MARK + key : key;
  return options.slot === undefined ? id : options.slot + SLOT_MARK + id;
}
