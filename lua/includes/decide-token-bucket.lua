-- includes/decide-token-bucket.lua: the decision of lua/token-bucket.lua as functions, so that script and the
-- all-limits script (lua/limits.lua) run one copy of the algorithm.
-- token_bucket_of(state, argv, o, record): the decision on the value the state key holds (GET; false when
-- absent), without touching Redis. argv[o + 1], argv[o + 2], ... are the ARGV of lua/token-bucket.lua (o = 0
-- there; its record flag is not read: `record`, a boolean, says). Returns the reply {allowed 0|1,
-- remaining, retryAfter, resetAt}, then, when a charge changes the state, the value to SET and its PX
-- ttl. lua/limits.lua decides a request's limits this way and writes only once all have allowed.
-- decide_token_bucket(key, argv, o, record): GET, decide, SET (in a batch, through includes/state-cache.lua); returns the reply.
-- @include state-cache
local function token_bucket_of(state, argv, o, record)
  local now = now_us(argv[o + 1])
  local capacity = number_of(argv[o + 2])
  local interval = number_of(argv[o + 3])
  local cost = number_of(argv[o + 4])

  local full = capacity * interval
  local full_at = math.max(now, tonumber(state or now))
  local level = full - (full_at - now)

  local need = cost * interval
  if level < need then
    return {0, math.max(0, math.floor(level / interval)), need - level, full_at}
  end
  if record then
    full_at = full_at + need
    level = level - need
    -- Held in a batch (includes/state-cache.lua): a whole number as it is (the text int() writes reads back
    -- as the same number); a fraction as its text, which is what the next call must read.
    local value = held_value and exact_whole(full_at) and full_at or int(full_at)
    return {1, math.floor(level / interval), 0, full_at}, value, ttl((full_at - now) / 1000)
  end
  return {1, math.floor(level / interval), 0, full_at}
end

local function decide_token_bucket(key, argv, o, record)
  if held_value then return decide_held(token_bucket_of, key, argv, o, record) end
  local reply, value, px = token_bucket_of(redis.call('GET', key), argv, o, record)
  if value then set_state(key, value, px) end
  return reply
end
