// The ARGV of one decision, built by name: the policy's arguments laid out once per limiter in the
// script's order (src/redis/script-table.ts); a call copies that template and sets its own few slots.
// One array per decision, as a hand-written positional array would cost: this runs for every request.
// Every slot is a string: ioredis turns each number into one per command it sends (String() per
// argument, and a mixed array), which measured ~0.2 µs per number, a dozen per three-limit request.
import { SluiceError } from '../errors.js';
import { countText, shapeOf, type BatchedScript, type ScriptArg } from '../redis/script-table.js';
import { CALL_ARGS, type CallArgName } from './algorithm.js';

export class DecisionArgs {
  private readonly template: string[];
  private readonly nowAt: number;
  private readonly costAt: number;
  private readonly recordAt: number;
  /** -1 when the script takes no lease id. */
  private readonly leaseAt: number;

  constructor(script: BatchedScript, policyArgs: object) {
    const names = shapeOf(script).argv;
    const byName = policyArgs as Readonly<Record<string, ScriptArg | undefined>>;
    const isCallArg = (n: string): n is CallArgName => (CALL_ARGS as readonly string[]).includes(n);
    this.template = names.map((n) => {
      if (isCallArg(n)) return '';
      const v = byName[n];
      if (v === undefined) throw new SluiceError('SLUICE_ERR_SCRIPT', `${script}: argument '${n}' is missing`);
      return String(v);
    });
    const at = (n: CallArgName, required: boolean) => {
      const i = names.indexOf(n);
      if (i < 0 && required) throw new SluiceError('SLUICE_ERR_SCRIPT', `${script}: a decision script takes '${n}'`);
      return i;
    };
    this.nowAt = at('now', true);
    this.costAt = at('cost', true);
    this.recordAt = at('record', true);
    this.leaseAt = at('leaseId', false);
  }

  /** The last call's ARGV and what it was built from: the next call with the same gets the same array. */
  private last: readonly string[] | undefined;
  private lastNow: ScriptArg = '';
  private lastCost = 0;
  private lastRecord = false;
  private lastLease = '';

  /**
   * The ARGV of a call at `now` (the script's time argument) of `cost`; `record` false = peek. Never
   * changed once built: a call like the one before (one rule's requests at one cost, Redis's clock)
   * gets the very same array, so it is neither built again nor compared value by value when a batch
   * looks for repeated arguments (src/redis/scripts.ts repeatsArgs).
   */
  build(now: ScriptArg, cost: number, record: boolean, leaseId: string): readonly string[] {
    if (this.last !== undefined && now === this.lastNow && cost === this.lastCost && record === this.lastRecord && leaseId === this.lastLease) return this.last;
    const args = this.template.slice();
    args[this.nowAt] = typeof now === 'number' ? String(now) : now;
    args[this.costAt] = countText(cost);
    args[this.recordAt] = record ? '1' : '0';
    if (this.leaseAt >= 0) args[this.leaseAt] = leaseId;
    this.last = args;
    this.lastNow = now;
    this.lastCost = cost;
    this.lastRecord = record;
    this.lastLease = leaseId;
    return args;
  }
}
