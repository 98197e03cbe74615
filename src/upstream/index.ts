// The upstream room's surface: header parsers and the budget controller's model.
export * from './signal.js';
export { parseUpstreamHeaders, headerSource } from './parse.js';
export { parseRetryAfter } from './retry-after.js';
export { goDuration, parseOpenAiTokens, usageTokens } from './openai.js';
export { resetFromNow } from './x-ratelimit.js';
export { callLimit, SHOPIFY_DRAIN_MS } from './shopify.js';
export * from './budget.js';
export { parseGraphqlCost, type GraphqlCost } from './graphql-cost.js';
