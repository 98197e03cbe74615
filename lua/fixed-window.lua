-- fixed-window.lua: fixed window counter, one atomic decision.
-- KEYS[1]  state: string "<window index>:<count>", expiring at the end of that window
-- ARGV[1]  now in ms since the epoch, or '' to read Redis TIME
-- ARGV[2]  limit (integer, units per window)
-- ARGV[3]  window length in ms (integer)
-- ARGV[4]  cost (integer >= 1)
-- ARGV[5]  1 = record an allowed call, 0 = peek (decide, change nothing)
-- returns {allowed 0|1, remaining, retryAfterMs, resetAtMs}
-- The window index lives in the value, not the key name, so the key is known before the script
-- reads the time (every key a script touches is passed in KEYS). A refused call is not counted.
-- @include now

local now = now_ms(ARGV[1])
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local record = ARGV[5] == '1'

local index = math.floor(now / window)
local reset_at = (index + 1) * window
local count = 0
local state = redis.call('GET', KEYS[1])
if state then
  local sep = string.find(state, ':', 1, true)
  if tonumber(string.sub(state, 1, sep - 1)) == index then
    count = tonumber(string.sub(state, sep + 1))
  end
end

if count + cost > limit then
  -- cost <= limit is checked by the caller, so the next window always has room.
  return {0, math.max(0, limit - count), reset_at - now, reset_at}
end
if record then
  count = count + cost
  redis.call('SET', KEYS[1], int(index) .. ':' .. int(count), 'PX', ttl(reset_at - now))
end
return {1, math.max(0, limit - count), 0, count > 0 and reset_at or now}
