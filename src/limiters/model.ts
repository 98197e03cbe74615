// The reference model of any policy: what `sluice simulate` and the property tests run.
import type { LimiterModel } from './algorithm.js';
import { ConcurrencyModel } from './concurrency.model.js';
import { FixedWindowModel } from './fixed-window.model.js';
import { GcraModel } from './gcra.model.js';
import type { Policy } from './policy.js';
import { SlidingCounterModel } from './sliding-counter.model.js';
import { SlidingLogModel } from './sliding-log.model.js';
import { TokenBucketModel } from './token-bucket.model.js';

export function modelFor(policy: Policy): LimiterModel {
  switch (policy.algorithm) {
    case 'fixed-window':
      return new FixedWindowModel(policy);
    case 'sliding-log':
      return new SlidingLogModel(policy);
    case 'sliding-counter':
      return new SlidingCounterModel(policy);
    case 'token-bucket':
      return new TokenBucketModel(policy);
    case 'leaky-bucket':
      return new GcraModel(policy);
    case 'concurrency':
      return new ConcurrencyModel(policy);
  }
}
