-- includes/decide-fixed-window.lua: the decision of lua/fixed-window.lua as functions, so that script and the
-- all-limits script (lua/limits.lua) run one copy of the algorithm.
-- fixed_window_of(state, argv, o, record): the decision on the value the state key holds (GET; false when
-- absent), without touching Redis. argv[o + 1], argv[o + 2], ... are the ARGV of lua/fixed-window.lua (o = 0
-- there; its record flag is not read: `record`, a boolean, says). Returns the reply {allowed 0|1,
-- remaining, retryAfter, resetAt}, then, when a charge changes the state, the value to SET and its PX
-- ttl (false: the key's expiry stands, set by this window's first charge: includes/now.lua set_state). lua/limits.lua decides a request's limits this way and writes only once all have allowed.
-- decide_fixed_window(key, argv, o, record): GET, decide, SET (in a batch, through includes/state-cache.lua); returns the reply.
-- @include state-cache
-- @include packed
local function fixed_window_of(state, argv, o, record)
  local now = now_ms(argv[o + 1])
  local limit = number_of(argv[o + 2])
  local window = number_of(argv[o + 3])
  local cost = number_of(argv[o + 4])

  local index = math.floor(now / window)
  local reset_at = (index + 1) * window
  local count = 0
  local same_window = false
  if state then
    local v = unpack_ints(state, 1)
    if v[1] == index then count, same_window = v[2], true end
  end

  if count + cost > limit then
    -- cost <= limit is checked by the caller, so the next window always has room.
    return {0, math.max(0, limit - count), reset_at - now, reset_at}
  end
  if record then
    count = count + cost
    -- The key already expires at this window's end plus the margin: false = keep that expiry.
    -- Held in a batch (includes/state-cache.lua): the numbers, written as text once, at the batch's end.
    local value = held_value and {index, count} or pack_ints(index, {count})
    return {1, math.max(0, limit - count), 0, count > 0 and reset_at or now}, value, not same_window and ttl(reset_at - now)
  end
  return {1, math.max(0, limit - count), 0, count > 0 and reset_at or now}
end

local function decide_fixed_window(key, argv, o, record)
  if held_value then return decide_held(fixed_window_of, key, argv, o, record) end
  local reply, value, px = fixed_window_of(redis.call('GET', key), argv, o, record)
  if value then set_state(key, value, px) end
  return reply
end
