-- includes/decide-sliding-counter.lua: the decision of lua/sliding-counter.lua as a function, so that script and the
-- all-limits script (lua/limits.lua) run one copy of the algorithm.
-- decide_sliding_counter(key, argv): key = the state key, argv = the ARGV of lua/sliding-counter.lua;
-- returns {allowed 0|1, remaining, retryAfter, resetAt}.
-- @include now
-- @include packed
local function decide_sliding_counter(key, argv)
  local now = now_ms(argv[1])
  local limit = tonumber(argv[2])
  local window = tonumber(argv[3])
  local cost = tonumber(argv[4])
  local record = argv[5] == '1'
  local ceil_mode = argv[6] == 'ceil'

  -- Exact integer quotients: float division can land one off near huge values.
  local function idiv(a, b)
    local q = math.floor(a / b)
    if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
    return q
  end
  local function weighted(prev, elapsed_in_window)
    local w = prev * (window - elapsed_in_window)
    if ceil_mode then return idiv(w + window - 1, window) end
    return idiv(w, window)
  end
  -- Smallest position p in [0, window] with weighted(prev, p) <= m, for m >= 0 (window = never in this window).
  local function first_position(prev, m)
    if prev == 0 then return 0 end
    local bound = ceil_mode and m * window or (m + 1) * window - 1
    return math.max(0, window - idiv(bound, prev))
  end

  local index = math.floor(now / window)
  local start = index * window
  local position = now - start
  local current, previous = 0, 0
  local state = redis.call('GET', key)
  if state then
    local v = unpack_ints(state, 2)
    if v[1] == index then
      current, previous = v[2], v[3]
    elseif v[1] == index - 1 then
      previous = v[2]
    end
  end

  local estimate = current + weighted(previous, position)
  local allowed = estimate + cost <= limit
  if allowed and record then
    current = current + cost
    estimate = estimate + cost
    redis.call('SET', key, pack_ints(index, {current, previous}), 'PX', ttl(start + 2 * window - now))
  end

  local reset_at = now
  if current > 0 then reset_at = start + 2 * window elseif previous > 0 then reset_at = start + window end
  if allowed then return {1, math.max(0, limit - estimate), 0, reset_at} end

  -- Refused: the first instant at which the estimate leaves room for `cost`, if nothing else arrives.
  local at
  local m = limit - cost - current
  if m >= 0 then
    local p = first_position(previous, m)
    if p < window then at = start + p end
  end
  if not at then
    -- Next window: this window's count becomes the weighted one and decays.
    local p = first_position(current, limit - cost)
    at = start + window + math.min(p, window)
  end
  return {0, math.max(0, limit - estimate), at - now, reset_at}
end
