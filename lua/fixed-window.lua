-- fixed-window.lua: fixed window counter, one atomic decision.
-- KEYS[1]  state: the window index and the count in it, packed into one integer by includes/packed.lua
--          (or "<window index>:<count>" when that does not fit), expiring at the end of that window
-- ARGV[1]  now: ms since the epoch, or '' to read Redis TIME
-- ARGV[2]  limit: integer, units per window
-- ARGV[3]  windowMs: window length in ms (integer)
-- ARGV[4]  cost: integer >= 1
-- ARGV[5]  record: 1 = record an allowed call, 0 = peek (decide, change nothing)
-- returns {allowed 0|1, remaining, retryAfterMs, resetAtMs}
-- The window index lives in the value, not the key name, so the key is known before the script
-- reads the time (every key a script touches is passed in KEYS). A refused call is not counted.
-- @include now
-- @include packed

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
  local v = unpack_ints(state, 1)
  if v[1] == index then count = v[2] end
end

if count + cost > limit then
  -- cost <= limit is checked by the caller, so the next window always has room.
  return {0, math.max(0, limit - count), reset_at - now, reset_at}
end
if record then
  count = count + cost
  redis.call('SET', KEYS[1], pack_ints(index, {count}), 'PX', ttl(reset_at - now))
end
return {1, math.max(0, limit - count), 0, count > 0 and reset_at or now}
