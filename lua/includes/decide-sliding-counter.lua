-- includes/decide-sliding-counter.lua: the decision of lua/sliding-counter.lua as functions, so that script and the
-- all-limits script (lua/limits.lua) run one copy of the algorithm.
-- sliding_counter_of(state, argv, o, record): the decision on the value the state key holds (GET; false when
-- absent), without touching Redis. argv[o + 1], argv[o + 2], ... are the ARGV of lua/sliding-counter.lua (o = 0
-- there; its record flag is not read: `record`, a boolean, says). Returns the reply {allowed 0|1,
-- remaining, retryAfter, resetAt}, then, when a charge changes the state, the value to SET and its PX
-- ttl (false: the key's expiry stands, set by this window's first charge: includes/now.lua set_state).
-- lua/limits.lua decides a request's limits this way and writes only once all have allowed.
-- decide_sliding_counter(key, argv, o, record): GET, decide, SET (in a batch, through includes/state-cache.lua); returns the reply.
-- @include state-cache
-- @include packed

-- Exact integer quotients: float division can land one off near huge values.
local function sc_idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end

-- The previous window's count weighted by the part of it still inside the sliding window.
local function sc_weighted(prev, elapsed_in_window, window, ceil_mode)
  local w = prev * (window - elapsed_in_window)
  if ceil_mode then return sc_idiv(w + window - 1, window) end
  return sc_idiv(w, window)
end

-- Smallest position p in [0, window] with weighted(prev, p) <= m, for m >= 0 (window = never in this window).
local function sc_first_position(prev, m, window, ceil_mode)
  if prev == 0 then return 0 end
  local bound = ceil_mode and m * window or (m + 1) * window - 1
  return math.max(0, window - sc_idiv(bound, prev))
end

local function sliding_counter_of(state, argv, o, record)
  local now = now_ms(argv[o + 1])
  local limit = number_of(argv[o + 2])
  local window = number_of(argv[o + 3])
  local cost = number_of(argv[o + 4])
  local ceil_mode = argv[o + 6] == 'ceil'

  local index = math.floor(now / window)
  local start = index * window
  local position = now - start
  local current, previous = 0, 0
  local same_window = false
  if state then
    local v = unpack_ints(state, 2)
    if v[1] == index then
      current, previous, same_window = v[2], v[3], true
    elseif v[1] == index - 1 then
      previous = v[2]
    end
  end

  local estimate = current + sc_weighted(previous, position, window, ceil_mode)
  local allowed = estimate + cost <= limit
  local value, px
  if allowed and record then
    current = current + cost
    estimate = estimate + cost
    -- Written in this window before: the key already expires at the next window's end plus the margin.
    -- Held in a batch (includes/state-cache.lua): the numbers, written as text once, at the batch's end.
    value = held_value and {index, current, previous} or pack_ints(index, {current, previous})
    px = not same_window and ttl(start + 2 * window - now)
  end

  local reset_at = now
  if current > 0 then reset_at = start + 2 * window elseif previous > 0 then reset_at = start + window end
  if allowed then return {1, math.max(0, limit - estimate), 0, reset_at}, value, px end

  -- Refused: the first instant at which the estimate leaves room for `cost`, if nothing else arrives.
  local at
  local m = limit - cost - current
  if m >= 0 then
    local p = sc_first_position(previous, m, window, ceil_mode)
    if p < window then at = start + p end
  end
  if not at then
    -- Next window: this window's count becomes the weighted one and decays.
    local p = sc_first_position(current, limit - cost, window, ceil_mode)
    at = start + window + math.min(p, window)
  end
  return {0, math.max(0, limit - estimate), at - now, reset_at}
end

local function decide_sliding_counter(key, argv, o, record)
  if held_value then return decide_held(sliding_counter_of, key, argv, o, record) end
  local reply, value, px = sliding_counter_of(redis.call('GET', key), argv, o, record)
  if value then set_state(key, value, px) end
  return reply
end
