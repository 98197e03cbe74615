-- sliding-log.lua: sliding window log, one atomic decision.
-- KEYS[1]  state: sorted set, one member per unit of cost, scored by its time in ms
-- ARGV[1]  now: ms since the epoch, or '' to read Redis TIME
-- ARGV[2]  limit: integer, units per window
-- ARGV[3]  windowMs: window length in ms (integer)
-- ARGV[4]  cost: integer >= 1
-- ARGV[5]  record: 1 = record, 0 = peek (decide, change nothing)
-- ARGV[6]  recordRejected: 1 = record refused calls too (strict "log-all"), 0 = log accepted calls only
-- returns {allowed 0|1, remaining, retryAfterMs, resetAtMs}
-- An entry leaves the log once its age reaches the window (score <= now - window).
-- @include now
-- @include batch

local now = now_ms(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local record = ARGV[5] == '1'
local record_refused = ARGV[6] == '1'

local key = KEYS[1]
if record then
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
end
-- In peek mode nothing is removed, so count only the live entries.
local count = redis.call('ZCOUNT', key, '(' .. int(now - window), '+inf')
local allowed = count + cost <= limit

if record and (allowed or record_refused) then
  -- Members must be unique: "<ms>:<ordinal>". Two calls in the same ms see different counts, because
  -- the count only grows within one ms (removal depends on now alone).
  local prefix = int(now) .. ':'
  local members = {}
  for i = 1, cost do members[i] = prefix .. int(count + i) end
  batched('ZADD', key, now, members)
  redis.call('PEXPIRE', key, ttl(window))
  count = count + cost
end

local reset_at = now
if record and (allowed or record_refused) then
  reset_at = now + window
else
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if newest[2] and tonumber(newest[2]) > now - window then reset_at = tonumber(newest[2]) + window end
end

if allowed then
  return {1, math.max(0, limit - count), 0, reset_at}
end
-- Refused: `cost` units fit once the oldest (count + cost - limit) live entries have aged out.
local need = count + cost - limit
local live_from = redis.call('ZCOUNT', key, '-inf', now - window)
local oldest = redis.call('ZRANGE', key, live_from + need - 1, live_from + need - 1, 'WITHSCORES')
return {0, math.max(0, limit - count), tonumber(oldest[2]) + window - now, reset_at}
