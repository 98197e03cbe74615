-- token-bucket.lua: token bucket, one atomic decision.
-- KEYS[1]  state: string "<level>:<last refill>", level = tokens x interval (µs of refill, an integer,
--          so no rounding ever creeps in), last refill in µs; absent = a full bucket
-- ARGV[1]  now in µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  capacity (integer, tokens)
-- ARGV[3]  interval: µs it takes to refill one token (integer, 1e6 / refill per second)
-- ARGV[4]  cost (integer >= 1, tokens)
-- ARGV[5]  1 = record, 0 = peek (decide, change nothing)
-- returns {allowed 0|1, remaining tokens, retryAfterUs, resetAtUs (when the bucket is full again)}
-- @include now

local now = now_us(ARGV[1])
local capacity = tonumber(ARGV[2])
local interval = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local record = ARGV[5] == '1'

local full = capacity * interval
local level = full
local state = redis.call('GET', KEYS[1])
if state then
  local l, t = string.match(state, '^(%d+):(%d+)$')
  -- A clock that steps back refills nothing; it never drains the bucket.
  level = math.min(full, tonumber(l) + math.max(0, now - tonumber(t)))
end

local need = cost * interval
if level < need then
  return {0, math.floor(level / interval), need - level, now + full - level}
end
if record then
  level = level - need
  redis.call('SET', KEYS[1], int(level) .. ':' .. int(now), 'PX', ttl((full - level) / 1000))
end
return {1, math.floor(level / interval), 0, now + full - level}
