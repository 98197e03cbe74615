-- includes/decide-concurrency-acquire.lua: the decision of lua/concurrency-acquire.lua as a function, so that script and
-- the all-limits script (lua/limits.lua) run one copy of the algorithm.
-- decide_concurrency(key, argv, o, record): key = the state key; argv[o + 1], argv[o + 2], ... are the ARGV of
-- lua/concurrency-acquire.lua (o = 0 there; its record flag is not read: `record`, a boolean, says);
-- returns {allowed 0|1, remaining, retryAfter, resetAt}.
-- @include now
-- @include batch
-- @include lease
local function decide_concurrency(key, argv, o, record)
  local now = now_ms(argv[o + 1])
  local limit = number_of(argv[o + 2])
  local lease_ms = number_of(argv[o + 3])
  local cost = number_of(argv[o + 4])

  if record then redis.call('ZREMRANGEBYSCORE', key, '-inf', now) end
  local held = redis.call('ZCOUNT', key, '(' .. int(now), '+inf')
  local allowed = held + cost <= limit

  if allowed and record then
    batched('ZADD', key, now + lease_ms, lease_members(argv[o + 6]))
    keep_alive(key, lease_ms)
    held = held + cost
  end

  local latest = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
  local reset_at = now
  if latest[2] and tonumber(latest[2]) > now then reset_at = tonumber(latest[2]) end
  if allowed then return {1, math.max(0, limit - held), 0, reset_at} end

  local need = held + cost - limit
  local dead = redis.call('ZCOUNT', key, '-inf', now)
  local freeing = redis.call('ZRANGE', key, dead + need - 1, dead + need - 1, 'WITHSCORES')
  return {0, math.max(0, limit - held), tonumber(freeing[2]) - now, reset_at}
end
