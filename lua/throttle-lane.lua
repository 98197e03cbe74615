-- throttle-lane.lua: read a lane's state in one consistent step.
-- KEYS[1]  lane hash {s, d, u}
-- KEYS[2]  lane queue: sorted set of "<job id>|<cost>"
-- ARGV[1]  now in µs since the epoch, or '' to read Redis TIME
-- returns {next slot µs, queued cost units, queued jobs, now µs}
-- @include now

local now = now_us(ARGV[1])
local state = redis.call('HMGET', KEYS[1], 's', 'd')
return {tonumber(state[1] or 0), tonumber(state[2] or 0), redis.call('ZCARD', KEYS[2]), now}
