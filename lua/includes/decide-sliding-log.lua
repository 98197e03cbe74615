-- includes/decide-sliding-log.lua: the decision of lua/sliding-log.lua as a function, so that script and
-- the all-limits script (lua/limits.lua) run one copy of the algorithm.
-- decide_sliding_log(key, argv, o, record): key = the state key; argv[o + 1], argv[o + 2], ... are the ARGV of
-- lua/sliding-log.lua (o = 0 there; its record flag is not read: `record`, a boolean, says);
-- returns {allowed 0|1, remaining, retryAfter, resetAt}.
-- @include now
-- @include batch
local function decide_sliding_log(key, argv, o, record)
  local now = now_ms(argv[o + 1])
  local limit = number_of(argv[o + 2])
  local window = number_of(argv[o + 3])
  local cost = number_of(argv[o + 4])
  local record_refused = argv[o + 6] == '1'

  if record then
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
  end
  -- In peek mode nothing is removed, so count only the live entries.
  local count = redis.call('ZCOUNT', key, '(' .. int(now - window), '+inf')
  local allowed = count + cost <= limit

  if record and (allowed or record_refused) then
    -- Members must be unique: "<ms>:<ordinal>". Two calls in the same ms see different counts, because
    -- the count only grows within one ms (removal depends on now alone).
    local prefix = int(now) .. ':'
    local members = {}
    for i = 1, cost do members[i] = prefix .. int(count + i) end
    batched('ZADD', key, now, members)
    redis.call('PEXPIRE', key, ttl(window))
    count = count + cost
  end

  local reset_at = now
  if record and (allowed or record_refused) then
    reset_at = now + window
  else
    local newest = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')
    if newest[2] and tonumber(newest[2]) > now - window then reset_at = tonumber(newest[2]) + window end
  end

  if allowed then
    return {1, math.max(0, limit - count), 0, reset_at}
  end
  -- Refused: `cost` units fit once the oldest (count + cost - limit) live entries have aged out.
  local need = count + cost - limit
  local live_from = redis.call('ZCOUNT', key, '-inf', now - window)
  local oldest = redis.call('ZRANGE', key, live_from + need - 1, live_from + need - 1, 'WITHSCORES')
  return {0, math.max(0, limit - count), tonumber(oldest[2]) + window - now, reset_at}
end
