// sluice: the public API, and nothing else.
export { createSluice, type Sluice, type SluiceOptions } from './sluice.js';
export { Limiter, type DecisionObserver, type DecisionOutcome, type LimitCallOptions } from './limiters/limiter.js';
export type { Decision, DecisionOptions } from './limiters/decision.js';
export { policySchema, parsePolicy, type Policy, type PolicyInput, type Algorithm } from './limiters/policy.js';
export { modelFor } from './limiters/model.js';
export type { LimiterModel } from './limiters/algorithm.js';
export { SluiceError, isSluiceError, ERROR_CODES, type ErrorCode } from './errors.js';
export { ManualClock, systemClock, type Clock, type ClockSource } from './redis/clock.js';
export { HOT_PATH_OPTIONS, type RedisClient, type RedisTarget } from './redis/connection.js';
