// sluice: the public API, and nothing else.
export { createSluice, type Sluice, type SluiceOptions, type SluiceObserver, type WorkerOptions } from './sluice.js';
export { Limiter, type DecisionObserver, type DecisionOutcome, type LimitCallOptions, type LimiterOptions } from './limiters/limiter.js';
export type { Decision, DecisionOptions } from './limiters/decision.js';
export { policySchema, parsePolicy, type Policy, type PolicyInput, type Algorithm } from './limiters/policy.js';
export { modelFor } from './limiters/model.js';
export type { LimiterModel } from './limiters/algorithm.js';
export { SluiceError, isSluiceError, ERROR_CODES, type ErrorCode } from './errors.js';
export { ManualClock, systemClock, type Clock, type ClockSource } from './redis/clock.js';
export { HOT_PATH_OPTIONS, type RedisClient, type RedisTarget } from './redis/connection.js';
export { Throttle, type SubmitOptions, type SubmitResult, type LaneInfo } from './throttle/throttle.js';
export { ThrottleWorker, type ThrottledJob, type JobHandler, type ThrottleWorkerOptions } from './throttle/worker.js';
export type { WaitLogger } from './throttle/await-config.js';
export { DeferJob, LateSend } from './throttle/defer.js';
export type { UpstreamReport, UpstreamScope, LearnOutcome } from './throttle/upstream-learn.js';
export { parseUpstreamHeaders, headerSource, parseRetryAfter, parseGraphqlCost, parseOpenAiTokens, usageTokens, MAX_RETRY_AFTER_MS, MAX_RESET_MS, SHOPIFY_DRAIN_MS } from './upstream/index.js';
export type { GraphqlCost } from './upstream/index.js';
export type { UpstreamSignal, ParsedSignal, IgnoredHeader, IgnoreReason, UpstreamStyle, HeaderSource, LearnEvent, LearnResult, Parsed } from './upstream/index.js';
export { throttleConfigSchema, upstreamLearnSchema, type ThrottleConfig, type ThrottleConfigInput, type UpstreamLearnConfig } from './throttle/config.js';
export type { JobStatus, JobState } from './throttle/job-status.js';
export { quotaSchema, quotaWindows, QuotaArgs, type QuotaConfig, type QuotaInput, type QuotaUse, type QuotaWindows } from './throttle/quota.js';
export { JobEventStream, JOB_EVENT_TYPES, type JobEvent, type JobEventType, type JobEventListener, type JobEventDetail } from './throttle/events.js';
export type { ThrottleObserver, SubmitOutcome, UpstreamEvent } from './throttle/observer.js';
export type { RulesSource } from './rules/rules-source.js';
export { Metrics, type RuleOutcome } from './metrics/metrics.js';
export { parseRules, loadRules, loadRulesAsync, watchRules, formatOf, describePolicy, descriptorIdentity, defaultHash, formatIssue, parseDuration, formatDuration } from './rules/index.js';
export type { ParseRulesOptions, RulesWatcher, WatchRulesOptions, RulesLogger, Rules, RequestMatch, Rule, DescriptorEntry, DescriptorOptions, HttpRules, RulesIssue } from './rules/index.js';
export type { RequestInfo } from './request/request-info.js';
export type { RunWorkers, RunWorkersOptions, RunningWorkers, WorkersEntry } from './workers-entry.js';
export type { QueueRule, QueueKeySource, QueueThrottleSettings, HttpHandlerRule, ModuleHandlerRule, HeaderValueSource } from './rules/index.js';
export { rateLimitHeaders, retryAfterHeaders, ietfDraft11Headers, ietfDraft07Headers, legacyHeaders, quotaView, DEFAULT_HEADER_SELECTION } from './headers/headers.js';
export type { HeaderSelection, HeaderInput, HeaderPair, IetfDraft, QuotaView } from './headers/headers.js';
// Types the exports above name in their signatures: exported as types so that each has a name (and
// an API reference page); constructing them is the instance's job.
export type { KeyBuilder, IdentityOptions } from './redis/keys.js';
export type { ThrottleKeys } from './throttle/keys.js';
export type { ThrottleTiming } from './throttle/config.js';
export type { JobData } from './throttle/job-status.js';
export type { RouteGroupSpec } from './request/route-groups.js';
