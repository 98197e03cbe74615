-- token-bucket.lua: token bucket, one atomic decision.
-- KEYS[1]  state: integer, the µs at which the bucket is full again (absent or past = a full bucket).
--          The level follows from it: tokens x interval = capacity x interval - (full_at - now), an exact
--          integer in µs of refill, so one integer is all the state (the classic {tokens, last refill}
--          pair in src/limiters/token-bucket.model.ts decides identically; the property tests hold them
--          together).
-- ARGV[1]  now: µs since the epoch, or '' to read Redis TIME
-- ARGV[2]  capacity: integer, tokens
-- ARGV[3]  intervalUs: µs it takes to refill one token (integer, 1e6 / refill per second)
-- ARGV[4]  cost: integer >= 1, tokens
-- ARGV[5]  record: 1 = record, 0 = peek (decide, change nothing)
-- returns {allowed 0|1, remaining tokens, retryAfterUs, resetAtUs (when the bucket is full again)}
-- @include now

local now = now_us(ARGV[1])
local capacity = tonumber(ARGV[2])
local interval = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local record = ARGV[5] == '1'

local full = capacity * interval
local full_at = math.max(now, tonumber(redis.call('GET', KEYS[1]) or now))
local level = full - (full_at - now)

local need = cost * interval
if level < need then
  return {0, math.max(0, math.floor(level / interval)), need - level, full_at}
end
if record then
  full_at = full_at + need
  level = level - need
  redis.call('SET', KEYS[1], int(full_at), 'PX', ttl((full_at - now) / 1000))
end
return {1, math.floor(level / interval), 0, full_at}
