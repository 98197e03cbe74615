// sluice: the public API, and nothing else.
export { createSluice, type Sluice, type SluiceOptions, type SluiceObserver, type WorkerOptions } from './sluice.js';
export { Limiter, type DecisionObserver, type DecisionOutcome, type LimitCallOptions } from './limiters/limiter.js';
export type { Decision, DecisionOptions } from './limiters/decision.js';
export { policySchema, parsePolicy, type Policy, type PolicyInput, type Algorithm } from './limiters/policy.js';
export { modelFor } from './limiters/model.js';
export type { LimiterModel } from './limiters/algorithm.js';
export { SluiceError, isSluiceError, ERROR_CODES, type ErrorCode } from './errors.js';
export { ManualClock, systemClock, type Clock, type ClockSource } from './redis/clock.js';
export { HOT_PATH_OPTIONS, type RedisClient, type RedisTarget } from './redis/connection.js';
export { Throttle, type SubmitOptions, type SubmitResult, type LaneInfo } from './throttle/throttle.js';
export { ThrottleWorker, type ThrottledJob, type JobHandler, type ThrottleWorkerOptions } from './throttle/worker.js';
export { DeferJob } from './throttle/defer.js';
export { throttleConfigSchema, type ThrottleConfig, type ThrottleConfigInput } from './throttle/config.js';
export type { JobStatus, JobState } from './throttle/job-status.js';
export type { ThrottleObserver, SubmitOutcome } from './throttle/observer.js';
