// The Redis keys of the control plane: per queue (inside the throttle's hash tag, beside its lanes)
// the overrides, the control flags and the per-second figures; across queues the change counter
// every process polls and the audit stream.
import { KEY_VERSION, type KeyBuilder } from '../redis/keys.js';
import type { ThrottleKeys } from '../throttle/keys.js';

export type FigureKind = 's' | 'r';

export class ControlKeys {
  /** Bumped by every control change: the one key every process polls. */
  readonly version: string;
  /** The capped audit stream of admin actions. */
  readonly audit: string;

  constructor(keys: KeyBuilder) {
    this.version = `${keys.prefix}:${KEY_VERSION}:ctl:v`;
    this.audit = `${keys.prefix}:${KEY_VERSION}:audit`;
  }

  /** Hash: lane id -> override JSON. */
  overrides(t: ThrottleKeys): string {
    return `${t.tag}:ovr`;
  }

  /** Hash: drain ('1'), pause ('1'), pauseUntil (epoch ms). */
  control(t: ThrottleKeys): string {
    return `${t.tag}:ctl`;
  }

  /** Counter of starts (s) or refused submits (r) in one epoch second. */
  figure(t: ThrottleKeys, kind: FigureKind, second: number): string {
    return `${t.tag}:n:${kind}:${second}`;
  }
}
