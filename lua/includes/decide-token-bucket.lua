-- includes/decide-token-bucket.lua: the decision of lua/token-bucket.lua as a function, so that script and the
-- all-limits script (lua/limits.lua) run one copy of the algorithm.
-- decide_token_bucket(key, argv): key = the state key, argv = the ARGV of lua/token-bucket.lua;
-- returns {allowed 0|1, remaining, retryAfter, resetAt}.
-- @include now
local function decide_token_bucket(key, argv)
  local now = now_us(argv[1])
  local capacity = tonumber(argv[2])
  local interval = tonumber(argv[3])
  local cost = tonumber(argv[4])
  local record = argv[5] == '1'

  local full = capacity * interval
  local full_at = math.max(now, tonumber(redis.call('GET', key) or now))
  local level = full - (full_at - now)

  local need = cost * interval
  if level < need then
    return {0, math.max(0, math.floor(level / interval)), need - level, full_at}
  end
  if record then
    full_at = full_at + need
    level = level - need
    redis.call('SET', key, int(full_at), 'PX', ttl((full_at - now) / 1000))
  end
  return {1, math.floor(level / interval), 0, full_at}
end
