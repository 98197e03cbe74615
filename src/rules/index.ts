// The rules file's public surface: what the HTTP layer, the workers and the CLI use.
export { parseRules, loadRules, loadRulesAsync, formatOf, type ParseRulesOptions } from './rules.js';
export { watchRules, type RulesWatcher, type WatchRulesOptions, type RulesLogger } from './watch.js';
export type { Rules, RequestMatch } from './compile.js';
export { descriptorIdentity, entryIdentity, type DescriptorEntry, type Rule } from './descriptor.js';
export { defaultHash, type DescriptorOptions, type HttpRules } from './request.js';
export type { QueueRule, QueueKeySource, QueueThrottleSettings, HttpHandlerRule, ModuleHandlerRule, HeaderValueSource } from './queues.js';
export { formatIssue, type RulesIssue } from './issues.js';
export { describePolicy } from './describe.js';
export { parseDuration, formatDuration } from './duration.js';
