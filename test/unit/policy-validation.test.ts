// Invalid policies fail with SLUICE_ERR_INVALID_POLICY naming the field; one case per failure mode.
import { describe, expect, it } from 'vitest';
import { parsePolicy, isSluiceError, SluiceError } from '../../src/index.js';

const cases: [string, unknown, string][] = [
  ['negative limit', { algorithm: 'fixed-window', limit: -1, windowMs: 1000 }, 'limit'],
  ['zero limit', { algorithm: 'fixed-window', limit: 0, windowMs: 1000 }, 'limit'],
  ['non-integer limit', { algorithm: 'sliding-log', limit: 2.5, windowMs: 1000 }, 'limit'],
  ['zero window', { algorithm: 'sliding-counter', limit: 5, windowMs: 0 }, 'windowMs'],
  ['non-integer window', { algorithm: 'fixed-window', limit: 5, windowMs: 10.5 }, 'windowMs'],
  ['string limit', { algorithm: 'fixed-window', limit: '5', windowMs: 1000 }, 'limit'],
  ['missing windowMs', { algorithm: 'fixed-window', limit: 5 }, 'windowMs'],
  ['zero capacity', { algorithm: 'token-bucket', capacity: 0, refillPerSecond: 1 }, 'capacity'],
  ['negative refill', { algorithm: 'token-bucket', capacity: 5, refillPerSecond: -1 }, 'refillPerSecond'],
  ['zero rate', { algorithm: 'leaky-bucket', ratePerSecond: 0, burst: 1 }, 'ratePerSecond'],
  ['negative burst', { algorithm: 'leaky-bucket', ratePerSecond: 1, burst: -1 }, 'burst'],
  ['non-integer burst', { algorithm: 'leaky-bucket', ratePerSecond: 1, burst: 1.5 }, 'burst'],
  ['zero lease', { algorithm: 'concurrency', limit: 2, leaseMs: 0 }, 'leaseMs'],
  ['unknown key', { algorithm: 'fixed-window', limit: 5, windowMs: 1000, burst: 3 }, 'burst'],
  ['unknown algorithm', { algorithm: 'adaptive', limit: 5 }, 'algorithm'],
  ['missing algorithm', { limit: 5, windowMs: 1000 }, 'algorithm'],
  ['bad fail mode', { algorithm: 'fixed-window', limit: 5, windowMs: 1000, failMode: 'maybe' }, 'failMode'],
  ['zero timeout', { algorithm: 'fixed-window', limit: 5, windowMs: 1000, timeoutMs: 0 }, 'timeoutMs'],
  ['bad rounding', { algorithm: 'sliding-counter', limit: 5, windowMs: 1000, rounding: 'round' }, 'rounding'],
  ['bad name', { algorithm: 'fixed-window', limit: 5, windowMs: 1000, name: 'a b' }, 'name'],
  ['inexact counter', { algorithm: 'sliding-counter', limit: 1e12, windowMs: 1e10 }, 'limit'],
];

describe('parsePolicy refuses', () => {
  it.each(cases)('%s', (_name, input, field) => {
    let error: unknown;
    try {
      parsePolicy(input);
    } catch (e) {
      error = e;
    }
    expect(isSluiceError(error, 'SLUICE_ERR_INVALID_POLICY')).toBe(true);
    const e = error as SluiceError;
    expect(e.message).toContain(field);
    expect((e.details as { path: string }[]).map((i) => i.path)).toContain(field);
  });
});

describe('parsePolicy accepts', () => {
  it('applies defaults and freezes the result', () => {
    const p = parsePolicy({ algorithm: 'sliding-log', limit: 5, windowMs: 1000 });
    expect(p).toMatchObject({ failMode: 'open', timeoutMs: 200, recordRejected: false });
    expect(Object.isFrozen(p)).toBe(true);
  });
});
