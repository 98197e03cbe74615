-- includes/decide-fixed-window.lua: the decision of lua/fixed-window.lua as a function, so that script and the
-- all-limits script (lua/limits.lua) run one copy of the algorithm.
-- decide_fixed_window(key, argv): key = the state key, argv = the ARGV of lua/fixed-window.lua;
-- returns {allowed 0|1, remaining, retryAfter, resetAt}.
-- @include now
-- @include packed
local function decide_fixed_window(key, argv)
  local now = now_ms(argv[1])
  local limit = tonumber(argv[2])
  local window = tonumber(argv[3])
  local cost = tonumber(argv[4])
  local record = argv[5] == '1'

  local index = math.floor(now / window)
  local reset_at = (index + 1) * window
  local count = 0
  local state = redis.call('GET', key)
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
    redis.call('SET', key, pack_ints(index, {count}), 'PX', ttl(reset_at - now))
  end
  return {1, math.max(0, limit - count), 0, count > 0 and reset_at or now}
end
