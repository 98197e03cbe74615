-- includes/decide-gcra.lua: the decision of lua/gcra.lua as functions, so that script and the
-- all-limits script (lua/limits.lua) run one copy of the algorithm.
-- gcra_of(state, argv, o, record): the decision on the value the state key holds (GET; false when
-- absent), without touching Redis. argv[o + 1], argv[o + 2], ... are the ARGV of lua/gcra.lua (o = 0
-- there; its record flag is not read: `record`, a boolean, says). Returns the reply {allowed 0|1,
-- remaining, retryAfter, resetAt}, then, when a charge changes the state, the value to SET and its PX
-- ttl. lua/limits.lua decides a request's limits this way and writes only once all have allowed.
-- decide_gcra(key, argv, o, record): GET, decide, SET (in a batch, through includes/state-cache.lua); returns the reply.
-- @include state-cache
local function gcra_of(state, argv, o, record)
  local now = now_us(argv[o + 1])
  local interval = number_of(argv[o + 2])
  local tolerance = number_of(argv[o + 3]) * interval
  local cost = number_of(argv[o + 4])

  local tat = tonumber(state or now)
  if tat < now then tat = now end

  local new_tat = tat + cost * interval
  local allow_at = new_tat - interval - tolerance
  if now < allow_at then
    return {0, math.max(0, math.floor((tolerance + interval - (tat - now)) / interval)), allow_at - now, tat}
  end
  if record then
    tat = new_tat
    -- Held in a batch (includes/state-cache.lua): a whole number as it is, a fraction as the text int() writes.
    local value = held_value and exact_whole(tat) and tat or int(tat)
    return {1, math.max(0, math.floor((tolerance + interval - (tat - now)) / interval)), 0, tat}, value, ttl((tat - now) / 1000)
  end
  return {1, math.max(0, math.floor((tolerance + interval - (tat - now)) / interval)), 0, tat}
end

local function decide_gcra(key, argv, o, record)
  if held_value then return decide_held(gcra_of, key, argv, o, record) end
  local reply, value, px = gcra_of(redis.call('GET', key), argv, o, record)
  if value then set_state(key, value, px) end
  return reply
end
