-- includes/decide-gcra.lua: the decision of lua/gcra.lua as a function, so that script and the
-- all-limits script (lua/limits.lua) run one copy of the algorithm.
-- decide_gcra(key, argv): key = the state key, argv = the ARGV of lua/gcra.lua;
-- returns {allowed 0|1, remaining, retryAfter, resetAt}.
-- @include now
local function decide_gcra(key, argv)
  local now = now_us(argv[1])
  local interval = tonumber(argv[2])
  local tolerance = tonumber(argv[3]) * interval
  local cost = tonumber(argv[4])
  local record = argv[5] == '1'

  local tat = tonumber(redis.call('GET', key) or now)
  if tat < now then tat = now end

  local new_tat = tat + cost * interval
  local allow_at = new_tat - interval - tolerance
  if now < allow_at then
    return {0, math.max(0, math.floor((tolerance + interval - (tat - now)) / interval)), allow_at - now, tat}
  end
  if record then
    tat = new_tat
    redis.call('SET', key, int(tat), 'PX', ttl((tat - now) / 1000))
  end
  return {1, math.max(0, math.floor((tolerance + interval - (tat - now)) / interval)), 0, tat}
end
